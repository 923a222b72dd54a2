/* rc_c: the C real-code program. Each request runs one idiom (request id
   % 10), chosen by serve's switch; the code is built with the compilers'
   default flags for the level, so -O2 makes tail jumps, thunks, .cold parts
   and jump tables of it. See rc_record.h for what is recorded.

     0 tail          f(x) { sink = x; return g(x + 1); }         jmp g
     1 thunk         thunk(x) { return g(x); }                    only `jmp g`
     2 tail_untraced start_tail(id) -> jmp h; h calls g twice     (a start too)
     3 mutual        is_even(n) ~> is_odd(n - 1) ~> ...           mutual tail calls
     4 noreturn_cold guarded: setjmp; checked: unlikely bail() in checked.cold;
                     bail: longjmp back to guarded (two frames left)
     5 jump_table    dispatch(op, x): a switch over six cases
     6 plt           pid_user(x) calls getpid through the PLT; a `lock add`
                     right after the call (its return site)
     7 recursion     sum_to(n) = n + sum_to(n - 1)
     8 first_call    first_call() { g0(); h0(); }: gcc -O2 makes its first
                     instruction the call (g0 needs no stack alignment)
     9 indirect      via_pointer(x) calls through a function pointer table */
#define _GNU_SOURCE
#include <setjmp.h>
#include <unistd.h>

#include "rc_record.h"

/* In the source, not in the flags: every function that matters keeps its own
   symbol and its calls. noclone keeps GCC from renaming it (.constprop,
   .isra); clang does not clone. */
#if defined(__clang__)
#define RC_FUNCTION __attribute__((noinline, used))
#else
#define RC_FUNCTION __attribute__((noinline, noclone, used))
#endif

volatile int sink;

RC_FUNCTION int g(int x) {
  RC_ENTER("g");
  sink = x;
  const int result = x * 3 + 1;
  RC_RETURN("g");
  return result;
}

/* 0: a tail call. */
RC_FUNCTION int f(int x) {
  RC_ENTER("f");
  sink = x;
  RC_TAIL("f", "g");
  return g(x + 1);
}

/* 1: a pure thunk: records nothing, so -O2 makes it the single `jmp g`;
   serve records the call around it. */
RC_FUNCTION int thunk(int x) { return g(x); }

/* 2: leaves by a tail jump to h (untraced in --functions mode), which calls
   g twice and returns to start_tail's caller. */
RC_FUNCTION int h(int x) {
  RC_ENTER("h");
  const int a = g(x);
  const int b = g(x + 1);
  RC_RETURN("h");
  return a + b;
}

RC_FUNCTION int start_tail(long id) {
  RC_ENTER("start_tail");
  sink = (int)id;
  RC_TAIL("start_tail", "h");
  return h((int)(id % 100));
}

/* 3: mutual tail recursion. */
RC_FUNCTION int is_odd(int n);

RC_FUNCTION int is_even(int n) {
  RC_ENTER("is_even");
  if (n == 0) {
    RC_RETURN("is_even");
    return 1;
  }
  RC_TAIL("is_even", "is_odd");
  return is_odd(n - 1);
}

RC_FUNCTION int is_odd(int n) {
  RC_ENTER("is_odd");
  if (n == 0) {
    RC_RETURN("is_odd");
    return 0;
  }
  RC_TAIL("is_odd", "is_even");
  return is_even(n - 1);
}

/* 4: a noreturn call on an unlikely path, leaving checked and bail by
   longjmp. `cold`, as error paths are marked in real code, is what makes
   GCC -O2 move the call into checked.cold. */
static __thread jmp_buf bail_env;

RC_FUNCTION __attribute__((noreturn, cold)) void bail(int x) {
  RC_ENTER("bail");
  sink = x;
  RC_CALL("longjmp@plt", 0);
  longjmp(bail_env, 1);
}

RC_FUNCTION int checked(int x) {
  RC_ENTER("checked");
  if (__builtin_expect(x % 2 == 1, 0)) bail(x);
  const int result = x + 5;
  RC_RETURN("checked");
  return result;
}

RC_FUNCTION int guarded(int x) {
  RC_ENTER("guarded");
  const int own_depth = rc_depth;
  int result;
  RC_CALL("_setjmp@plt", 0);
  if (setjmp(bail_env) == 0) {
    RC_CALLED("_setjmp@plt");
    result = checked(x);
  } else {
    /* setjmp's second return: no call of it is open any more. */
    RC_CAUGHT("guarded", own_depth);
    result = -1;
  }
  sink = result;
  RC_RETURN("guarded");
  return result;
}

/* 5: a switch dense enough for a jump table. */
RC_FUNCTION int op_add(int x) { RC_ENTER("op_add"); sink = x; RC_RETURN("op_add"); return x + 1; }
RC_FUNCTION int op_mul(int x) { RC_ENTER("op_mul"); sink = x; RC_RETURN("op_mul"); return x * 2; }
RC_FUNCTION int op_neg(int x) { RC_ENTER("op_neg"); sink = x; RC_RETURN("op_neg"); return -x; }
RC_FUNCTION int op_sq(int x) { RC_ENTER("op_sq"); sink = x; RC_RETURN("op_sq"); return x * x; }
RC_FUNCTION int op_half(int x) { RC_ENTER("op_half"); sink = x; RC_RETURN("op_half"); return x / 2; }
RC_FUNCTION int op_inc3(int x) { RC_ENTER("op_inc3"); sink = x; RC_RETURN("op_inc3"); return x + 3; }

RC_FUNCTION int dispatch(int op, int x) {
  RC_ENTER("dispatch");
  int result;
  switch (op) {
    case 0: result = op_add(x); break;
    case 1: result = op_mul(x); break;
    case 2: result = op_neg(x); break;
    case 3: result = op_sq(x); break;
    case 4: result = op_half(x); break;
    case 5: result = op_inc3(x); break;
    default: result = 0; break;
  }
  sink = result;
  RC_RETURN("dispatch");
  return result;
}

/* 6: a call through the PLT into libc, followed at once by an atomic
   counter (`lock add`, as redis's zmalloc does after malloc_usable_size):
   the kernel cannot put a uprobe on a LOCK-prefixed instruction, so xref
   sees this call's return one instruction later. */
static unsigned long pid_calls;

RC_FUNCTION int pid_user(int x) {
  RC_ENTER("pid_user");
  RC_CALL("getpid@plt", 0);
  const int pid = (int)getpid();
  __atomic_add_fetch(&pid_calls, 1, __ATOMIC_RELAXED);
  RC_CALLED("getpid@plt");
  sink = pid;
  RC_RETURN("pid_user");
  return x + (pid & 1);
}

/* 7: direct recursion; the recording after the call keeps it a real call
   (no tail-recursion loop). */
RC_FUNCTION int sum_to(int n) {
  RC_ENTER("sum_to");
  int result = n;
  if (n > 0) result += sum_to(n - 1);
  RC_RETURN("sum_to");
  return result;
}

/* 8: nothing before the first call; serve records the call around it. */
RC_FUNCTION void g0(void) { RC_ENTER("g0"); sink = 10; RC_RETURN("g0"); }
RC_FUNCTION void h0(void) { RC_ENTER("h0"); sink = 11; RC_RETURN("h0"); }
RC_FUNCTION void first_call(void) {
  g0();
  h0();
}

/* 9: an indirect call through a table of function pointers. */
static int (*const op_table[3])(int) = {op_add, op_mul, op_neg};
static volatile int op_index;

RC_FUNCTION int via_pointer(int x) {
  RC_ENTER("via_pointer");
  op_index = x % 3;
  const int result = op_table[op_index](x);
  sink = result;
  RC_RETURN("via_pointer");
  return result;
}

static const char* const kIdioms[10] = {"tail",       "thunk",     "tail_untraced", "mutual",     "noreturn_cold",
                                        "jump_table", "plt",       "recursion",     "first_call", "indirect"};

static const char* rc_idiom_of(long id) { return kIdioms[id % 10]; }

/* The window start of the main scenario: one idiom per request. */
RC_FUNCTION long serve(long id) {
  RC_ENTER("serve");
  const int x = (int)(id % 1000);
  /* 0, 1 on worker 0 and 2, 3 on worker 1 (20 requests each). */
  const int variant = (int)(id / 10 % 100 + id / 1000 * 2);
  long result;
  switch (id % 10) {
    case 0: result = f(x); break;
    case 1:
      RC_CALL("thunk", 0);
      result = thunk(x);
      RC_CALLED("thunk");
      break;
    case 2: result = start_tail(id); break;
    case 3: result = is_even(x % 7); break;
    case 4: result = guarded(variant); break;
    case 5: result = dispatch(variant % 6, x); break;
    case 6: result = pid_user(x); break;
    case 7: result = sum_to(variant % 4 + 1); break;
    case 8:
      RC_CALL("first_call", 0);
      first_call();
      RC_CALLED("first_call");
      result = 8;
      break;
    default: result = via_pointer(variant); break;
  }
  sink = (int)result;
  RC_RETURN("serve");
  return result;
}

#define RC_SERVE(id) serve(id)
#define RC_SERVE_ADDRESS serve
#include "rc_service.h"
