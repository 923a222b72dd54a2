/* rc_unseen: frames that end where no probe sees them (issue 23), in the
   shapes Debian's sqlite3 and nginx have. Each request runs one idiom
   (request id % 4); see rc_record.h for what is recorded, and
   check_unseen.py for how the record becomes the window a correct xref
   shows.

     0 pointer_tail       locked() calls lock, unlock, lock, unlock from one
                          stack pointer; each ends in `jmp *` through a table
                          of function pointers (as sqlite3_mutex_enter's
                          `jmp *0x80(%rax)`), into code nobody traces
     1 pointer_tail_deep  locked_deep() calls lock, then an untraced helper
                          from the same stack pointer, which calls small()
                          deeper down, then unlock (sqlite3_prepare_v2's
                          shape: lock's frame is over before small is entered)
     2 tail_return        palloc jumps to its untraced large-allocation
                          helper, which returns; then chain_link (untraced)
                          jumps to palloc from the same stack pointer (nginx's
                          ngx_palloc, ngx_palloc_large, ngx_alloc_chain_link)
     3 stale_slot         release() (untraced) calls unlock and returns; then
                          wide() (untraced), whose frame covers the slot
                          unlock was called at without writing it, calls
                          small() deeper down: the slot still holds unlock's
                          return address when small is entered (GCC -O2),
                          as after sqlite3Malloc's sqlite3_mutex_leave

   The untraced functions record nothing: a traced function's record says
   `~ NAME TARGET` where it hands its frame to one of them. */
#define _GNU_SOURCE
#include "rc_record.h"

#if defined(__clang__)
#define RC_FUNCTION __attribute__((noinline, used))
#else
#define RC_FUNCTION __attribute__((noinline, noclone, used))
#endif

volatile int sink;

/* --- 0, 1: a mutex whose methods are a table of function pointers -------- */

struct mutex_methods {
  int (*enter)(int* word);
  int (*leave)(int* word);
};

RC_FUNCTION int enter_impl(int* word) {
  *word += 1;
  return *word;
}

RC_FUNCTION int leave_impl(int* word) {
  *word -= 1;
  return *word;
}

static struct mutex_methods methods = {enter_impl, leave_impl};
static struct mutex_methods* volatile configured = &methods;
static __thread int mutex_word;

RC_FUNCTION int lock(int* word) {
  RC_ENTER("lock");
  RC_TAIL("lock", "enter_impl");
  return configured->enter(word);
}

RC_FUNCTION int unlock(int* word) {
  RC_ENTER("unlock");
  RC_TAIL("unlock", "leave_impl");
  return configured->leave(word);
}

RC_FUNCTION int small(int x) {
  RC_ENTER("small");
  sink = x;
  RC_RETURN("small");
  return x + 1;
}

/* Untraced, between the caller and small: small runs below the stack
   pointer lock was called at, whose slot now holds helper's return address. */
RC_FUNCTION int helper(int x) {
  volatile char room[64];
  room[x & 63] = (char)x;
  return small(x + room[x & 63]) + 1;
}

RC_FUNCTION int locked(int x) {
  RC_ENTER("locked");
  int total = lock(&mutex_word);
  total += unlock(&mutex_word);
  total += lock(&mutex_word);
  total += unlock(&mutex_word);
  sink = total + x;
  RC_RETURN("locked");
  return total;
}

RC_FUNCTION int locked_deep(int x) {
  RC_ENTER("locked_deep");
  int total = lock(&mutex_word);
  total += helper(x);
  total += unlock(&mutex_word);
  sink = total;
  RC_RETURN("locked_deep");
  return total;
}

/* --- 3: a slot that outlives its frame --------------------------------- */

RC_FUNCTION int release(int x) {
  sink = x;
  return unlock(&mutex_word) + 1; /* a call: the result is used */
}

RC_FUNCTION int wide(int x) {
  volatile char room[512];
  room[0] = (char)x;
  return small(room[0]) + room[1];
}

RC_FUNCTION int stale_slot(int x) {
  RC_ENTER("stale_slot");
  int total = release(x);
  total += wide(x);
  sink = total;
  RC_RETURN("stale_slot");
  return total;
}

/* --- 2: a tail jump into code that returns, then a new call by a jump ---- */

struct pool {
  long max;
  long used;
  char room[256];
};

static __thread struct pool the_pool;
static char large_room[4096];

/* Opaque to the optimizer (the barrier), as a real allocator is: otherwise
   clang knows what it returns and that it reads no record, and turns
   palloc's jump into a call. */
RC_FUNCTION void* palloc_large(struct pool* pool, long size) {
  __asm__ volatile("" ::: "memory");
  pool->used += size;
  return large_room + (pool->used & 1023);
}

RC_FUNCTION void* palloc(struct pool* pool, long size) {
  RC_ENTER("palloc");
  if (__builtin_expect(size <= pool->max, 1)) {
    void* result = pool->room + (pool->used & 127);
    pool->used += size;
    RC_RETURN("palloc");
    return result;
  }
  RC_TAIL("palloc", "palloc_large");
  return palloc_large(pool, size);
}

RC_FUNCTION void* chain_link(struct pool* pool) { return palloc(pool, 16); }

RC_FUNCTION int tail_return(int x) {
  RC_ENTER("tail_return");
  the_pool.max = 64;
  char* large = palloc(&the_pool, 1000 + x);
  char* link = chain_link(&the_pool);
  sink = (int)(large - link);
  RC_RETURN("tail_return");
  return x;
}

static const char* const kIdioms[4] = {"pointer_tail", "pointer_tail_deep", "tail_return", "stale_slot"};

static const char* rc_idiom_of(long id) { return kIdioms[id % 4]; }

RC_FUNCTION long serve(long id) {
  RC_ENTER("serve");
  const int x = (int)(id % 1000);
  long result;
  switch (id % 4) {
    case 0: result = locked(x); break;
    case 1: result = locked_deep(x); break;
    case 2: result = tail_return(x); break;
    default: result = stale_slot(x); break;
  }
  sink = (int)result;
  RC_RETURN("serve");
  return result;
}

#define RC_SERVE(id) serve(id)
#define RC_SERVE_ADDRESS serve
#include "rc_service.h"
