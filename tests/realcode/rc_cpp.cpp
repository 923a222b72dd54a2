// rc_cpp: the C++ real-code program. Each request runs one idiom (request
// id % 8), chosen by rc::serve's switch; built with the compilers' default
// flags for the level. See rc_record.h for what is recorded.
//
//   0 catch_end      catcher: try { mid -> thrower } catch: the handler ends
//                    the function, so it leaves by `jmp __cxa_end_catch`;
//                    the throw (odd variants) leaves two frames
//   1 throw_out      throw_start(id) -> mid2 -> thrower2 throws (odd variants),
//                    caught in serve, the start's caller (a start too)
//   2 noreturn_throw guard: try { checked2 } catch (...); checked2 calls the
//                    [[noreturn]] cold bail2, which throws, on odd variants;
//                    then guard leaves by `return twice(result)`, a tail
//                    jump: one function with a try/catch and a tail call
//   3 virtual        virt_user: shapes[i]->area(x) through the vtable
//   4 mi_thunk       mi_user: a call through Second* of a Both or a Pair,
//                    which enters "non-virtual thunk to rc::Both::second"
//                    (or Pair's), a `this` adjustment and a `jmp`
//   5 lambda         lam_user calls a lambda through a std::function
//   6 plt            len_user calls strlen through the PLT
//   7 recursion      walk(n) = n + walk(n - 1)
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "rc_record.h"

// In the source, not in the flags: every function that matters keeps its own
// symbol and its calls. noclone keeps GCC from renaming it (.constprop,
// .isra); clang does not clone. A lambda takes the attribute after its
// parameter list (before a trailing return type, where both compilers apply
// it to the call operator).
#if defined(__clang__)
#define RC_FUNCTION __attribute__((noinline, used))
#define RC_LAMBDA __attribute__((noinline))
#else
#define RC_FUNCTION __attribute__((noinline, noclone, used))
#define RC_LAMBDA __attribute__((noinline, noclone))
#endif

namespace rc {

volatile int sink;

// --- 0, 1: exceptions ------------------------------------------------------

RC_FUNCTION int thrower(int x) {
  RC_ENTER("rc::thrower");
  if (x % 2 == 1) throw std::runtime_error("odd");
  RC_RETURN("rc::thrower");
  return x * 2;
}

// No handler and nothing to destroy: an exception passes straight through.
RC_FUNCTION int mid(int x) {
  RC_ENTER("rc::mid");
  const int result = thrower(x) + 1;
  RC_RETURN("rc::mid");
  return result;
}

// The handler is the function's last statement: after it only
// __cxa_end_catch runs, which compilers make a tail jump.
RC_FUNCTION void catcher(int x) {
  RC_ENTER("rc::catcher");
  const int own_depth = rc_depth;
  try {
    sink = mid(x);
    RC_RETURN("rc::catcher");
  } catch (const std::exception&) {
    RC_CAUGHT("rc::catcher", own_depth);
    RC_CALL("__cxa_begin_catch@plt", 0);  // made before the handler's body
    RC_CALLED("__cxa_begin_catch@plt");
    sink = -1;
    RC_TAIL("rc::catcher", "__cxa_end_catch@plt");
  }
}

RC_FUNCTION int thrower2(int x) {
  RC_ENTER("rc::thrower2");
  if (x % 2 == 1) throw std::runtime_error("odd");
  RC_RETURN("rc::thrower2");
  return x * 3;
}

RC_FUNCTION int mid2(int x) {
  RC_ENTER("rc::mid2");
  const int result = thrower2(x) + 1;
  RC_RETURN("rc::mid2");
  return result;
}

RC_FUNCTION long throw_start(long id) {
  RC_ENTER("rc::throw_start");
  const long result = mid2(static_cast<int>(id / 8 % 100 + id / 1000 * 2)) + id;
  RC_RETURN("rc::throw_start");
  return result;
}

// --- 2: a noreturn function on a cold path, which throws ---------------------

[[noreturn]] RC_FUNCTION __attribute__((cold)) void bail2(int x) {
  RC_ENTER("rc::bail2");
  sink = x;
  throw std::runtime_error("bail");
}

RC_FUNCTION int checked2(int x) {
  RC_ENTER("rc::checked2");
  if (__builtin_expect(x % 2 == 1, 0)) bail2(x);
  const int result = x + 5;
  RC_RETURN("rc::checked2");
  return result;
}

RC_FUNCTION int twice(int x) {
  RC_ENTER("rc::twice");
  sink = x;
  RC_RETURN("rc::twice");
  return x * 2;
}

// A try/catch and, after it, a call in tail position: outside the try
// block nothing is left to unwind, so -O2 makes it `jmp twice`.
RC_FUNCTION int guard(int x) {
  RC_ENTER("rc::guard");
  const int own_depth = rc_depth;
  int result;
  try {
    result = checked2(x);
  } catch (...) {
    RC_CAUGHT("rc::guard", own_depth);
    RC_CALL("__cxa_begin_catch@plt", 0);
    RC_CALLED("__cxa_begin_catch@plt");
    result = -1;
    RC_CALL("__cxa_end_catch@plt", 0);  // made right after this body
    RC_CALLED("__cxa_end_catch@plt");
  }
  sink = result;
  RC_TAIL("rc::guard", "rc::twice");
  return twice(result);
}

// --- 3, 4: virtual calls -----------------------------------------------------

// The function a virtual call enters: slot 0 of the object's vtable (the
// Itanium C++ ABI; the called function is each class's first virtual one).
// A macro, not a function: at -O0 a function would be one more call.
#define RC_FIRST_VIRTUAL_SLOT(object) (**reinterpret_cast<const uintptr_t* const*>(object))

struct Shape {
  virtual int area(int x) const = 0;
};
struct Square : Shape {
  int area(int x) const override;
};
struct Circle : Shape {
  int area(int x) const override;
};
struct Triangle : Shape {
  int area(int x) const override;
};

RC_FUNCTION int Square::area(int x) const {
  RC_ENTER("rc::Square::area");
  RC_RETURN("rc::Square::area");
  return x * x;
}
RC_FUNCTION int Circle::area(int x) const {
  RC_ENTER("rc::Circle::area");
  RC_RETURN("rc::Circle::area");
  return x * x * 3;
}
RC_FUNCTION int Triangle::area(int x) const {
  RC_ENTER("rc::Triangle::area");
  RC_RETURN("rc::Triangle::area");
  return x * x / 2;
}

Square square;
Circle circle;
Triangle triangle;
// Not const and not static: the compiler cannot know which shape is called.
const Shape* shapes[3] = {&square, &circle, &triangle};

RC_FUNCTION int virt_user(int x) {
  RC_ENTER("rc::virt_user");
  const Shape* shape = shapes[x % 3];
  RC_CALL("vcall", RC_FIRST_VIRTUAL_SLOT(shape));
  const int result = shape->area(x);
  RC_CALLED("vcall");
  sink = result;
  RC_RETURN("rc::virt_user");
  return result;
}

// A call through the second base enters a compiler-made thunk that adjusts
// `this` and jumps to Both::second.
struct First {
  virtual int first(int x) const = 0;
  int a = 1;
};
struct Second {
  virtual int second(int x) const = 0;
  int b = 2;
};
struct Both : First, Second {
  int first(int x) const override;
  int second(int x) const override;
};
// A second class of the same shape, so no single target is likely enough for
// GCC to call it directly (speculative devirtualization) instead of the thunk.
struct Pair : First, Second {
  int first(int x) const override;
  int second(int x) const override;
};

RC_FUNCTION int Both::first(int x) const {
  RC_ENTER("rc::Both::first");
  RC_RETURN("rc::Both::first");
  return x + a;
}
RC_FUNCTION int Both::second(int x) const {
  RC_ENTER("rc::Both::second");
  RC_RETURN("rc::Both::second");
  return x + b;
}

RC_FUNCTION int Pair::first(int x) const {
  RC_ENTER("rc::Pair::first");
  RC_RETURN("rc::Pair::first");
  return x - a;
}
RC_FUNCTION int Pair::second(int x) const {
  RC_ENTER("rc::Pair::second");
  RC_RETURN("rc::Pair::second");
  return x - b;
}

Both both;
Pair pair;
const Second* second_bases[2] = {&both, &pair};

RC_FUNCTION int mi_user(int x) {
  RC_ENTER("rc::mi_user");
  const Second* base = second_bases[x / 8 % 2];
  RC_CALL("vcall", RC_FIRST_VIRTUAL_SLOT(base));
  const int result = base->second(x);
  RC_CALLED("vcall");
  sink = result;
  RC_RETURN("rc::mi_user");
  return result;
}

// --- 5: a lambda through std::function ----------------------------------------

std::function<int(int)> lambda_fn = [](int v) RC_LAMBDA -> int {
  RC_ENTER("rc::lambda");
  sink = v;
  RC_RETURN("rc::lambda");
  return v * 2 + 1;
};

// libstdc++'s std::function keeps the function it calls (_M_invoker) after
// 16 bytes of functor storage and the manager pointer.
static_assert(sizeof(std::function<int(int)>) == 32, "libstdc++ std::function layout");
#define RC_FUNCTION_INVOKER(function) \
  (*reinterpret_cast<const volatile uintptr_t*>(reinterpret_cast<const char*>(&(function)) + 24))

RC_FUNCTION int lam_user(int x) {
  RC_ENTER("rc::lam_user");
  RC_CALL("std_function", RC_FUNCTION_INVOKER(lambda_fn));
  const int result = lambda_fn(x);
  RC_CALLED("std_function");
  sink = result;
  RC_RETURN("rc::lam_user");
  return result;
}

// --- 6: a PLT call ---------------------------------------------------------------

char name_buffer[32] = "real-code";

RC_FUNCTION int len_user(int x) {
  RC_ENTER("rc::len_user");
  name_buffer[x % 8] = 'a';
  RC_CALL("strlen@plt", 0);
  const size_t length = strlen(name_buffer);
  RC_CALLED("strlen@plt");
  sink = static_cast<int>(length);
  RC_RETURN("rc::len_user");
  return static_cast<int>(length) + x;
}

// --- 7: recursion ------------------------------------------------------------------

RC_FUNCTION int walk(int n) {
  RC_ENTER("rc::walk");
  int result = n;
  if (n > 0) result += walk(n - 1);
  RC_RETURN("rc::walk");
  return result;
}

// --- the window start of the main scenario ------------------------------------------

const char* const kIdioms[8] = {"catch_end", "throw_out", "noreturn_throw", "virtual",
                                "mi_thunk",  "lambda",    "plt",            "recursion"};

RC_FUNCTION long serve(long id) {
  RC_ENTER("rc::serve");
  const int own_depth = rc_depth;
  const int x = static_cast<int>(id % 1000);
  // 0, 1, 2 on worker 0 and 27, 28, 29 on worker 1 (20 requests each).
  const int variant = static_cast<int>(id / 8 % 100 + id / 1000 * 2);
  long result = 0;
  switch (id % 8) {
    case 0: catcher(variant); break;
    case 1:
      try {
        result = throw_start(id);
      } catch (const std::exception&) {
        RC_CAUGHT("rc::serve", own_depth);
        RC_CALL("__cxa_begin_catch@plt", 0);
        RC_CALLED("__cxa_begin_catch@plt");
        result = -1;
        RC_CALL("__cxa_end_catch@plt", 0);
        RC_CALLED("__cxa_end_catch@plt");
      }
      break;
    case 2: result = guard(variant); break;
    case 3: result = virt_user(x); break;
    case 4: result = mi_user(x); break;
    case 5: result = lam_user(x); break;
    case 6: result = len_user(x); break;
    default: result = walk(variant % 4 + 1); break;
  }
  sink = static_cast<int>(result);
  RC_RETURN("rc::serve");
  return result;
}

}  // namespace rc

static const char* rc_idiom_of(long id) { return rc::kIdioms[id % 8]; }

#define RC_SERVE(id) rc::serve(id)
#define RC_SERVE_ADDRESS (&rc::serve)
#include "rc_service.h"
