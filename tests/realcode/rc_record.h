/* The ground-truth recorder of the real-code programs (C and C++).

   A recorded function notes its own entry, return and tail exit with inline
   stores into thread-local arrays: no call, so recording neither adds nor
   removes a call, and a `return g(x)` after RC_TAIL still compiles to
   `jmp g` where the compiler makes it one. What a function cannot note
   itself (a PLT call, a thunk that must stay one `jmp`, a call through a
   std::function) its caller notes around the call (RC_CALL, RC_CALLED).

   One line per event, written by the worker with one write() when the
   request ends:

     TID REQ KIND NAME DEPTH EXTRA

   KIND  @ request start (NAME: the idiom the request runs)
         > entry of NAME, EXTRA: its return address (live, hex)
         < NAME returns through its own ret, as far as the source knows
         ~ NAME leaves by `return EXTRA(...)`, a call in tail position
           (whether it became a jmp is the binary's business: the checker
           tells from the callee's return address, or from objdump)
         [ the caller calls NAME, which records nothing itself; EXTRA: the
           callee's live address when the caller can read it (a vtable slot,
           a std::function's invoker), else 0
         ] that call returned (if NAME's frame is still the caller's callee)
         ! NAME's frame was left by unwinding (longjmp or an exception)
         * NAME caught the unwinding: every frame above it was left
   DEPTH the program's own count of open recorded frames below the event.
   TID is the kernel thread id, REQ the request id (decimal). */
#ifndef RC_RECORD_H
#define RC_RECORD_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RC_MAX_EVENTS 1024 /* a power of two: indexes wrap instead of calling abort */
#define RC_MAX_FRAMES 256

struct rc_event {
  const char* name;
  const char* extra_name; /* ~: the tail callee */
  uintptr_t extra;        /* >: return address; [: callee address */
  int depth;
  char kind;
};

/* static __thread: local-exec TLS, a %fs-relative store with no call, in
   PIE and non-PIE builds at every optimization level. */
static __thread struct rc_event rc_events[RC_MAX_EVENTS];
static __thread unsigned rc_count;
static __thread int rc_depth;
static __thread const char* rc_frames[RC_MAX_FRAMES];

#define RC_PUT(kind_, name_, depth_, extra_, extra_name_)      \
  do {                                                         \
    unsigned rc_i_ = rc_count++ & (RC_MAX_EVENTS - 1);         \
    rc_events[rc_i_].kind = (kind_);                           \
    rc_events[rc_i_].name = (name_);                           \
    rc_events[rc_i_].depth = (depth_);                         \
    rc_events[rc_i_].extra = (uintptr_t)(extra_);              \
    rc_events[rc_i_].extra_name = (extra_name_);               \
  } while (0)

#define RC_PUSH(name_) (rc_frames[rc_depth++ & (RC_MAX_FRAMES - 1)] = (name_))

/* First statement of a recorded function. */
#define RC_ENTER(name_)                                                  \
  do {                                                                   \
    RC_PUT('>', name_, rc_depth, __builtin_return_address(0), (const char*)0); \
    RC_PUSH(name_);                                                      \
  } while (0)

/* Right before `return` (the ret). */
#define RC_RETURN(name_)                             \
  do {                                               \
    --rc_depth;                                      \
    RC_PUT('<', name_, rc_depth, 0, (const char*)0); \
  } while (0)

/* Right before `return callee(...)`. */
#define RC_TAIL(name_, callee_)               \
  do {                                        \
    --rc_depth;                               \
    RC_PUT('~', name_, rc_depth, 0, callee_); \
  } while (0)

/* Around a call of a function that records nothing itself. */
#define RC_CALL(name_, address_)                                \
  do {                                                          \
    RC_PUT('[', name_, rc_depth, address_, (const char*)0);     \
    RC_PUSH(name_);                                             \
  } while (0)
#define RC_CALLED(name_)                             \
  do {                                               \
    --rc_depth;                                      \
    RC_PUT(']', name_, rc_depth, 0, (const char*)0); \
  } while (0)

/* In a catch handler (or after longjmp) of NAME, whose frames below and
   including its own numbered CATCHER_DEPTH (rc_depth right after its
   RC_ENTER): every frame above was unwound, innermost first. */
#define RC_CAUGHT(name_, catcher_depth_)                                               \
  do {                                                                                 \
    while (rc_depth > (catcher_depth_)) {                                              \
      --rc_depth;                                                                      \
      RC_PUT('!', rc_frames[rc_depth & (RC_MAX_FRAMES - 1)], rc_depth, 0, (const char*)0); \
    }                                                                                  \
    RC_PUT('*', name_, rc_depth - 1, 0, (const char*)0);                               \
  } while (0)

/* --- the worker's side: not recorded, never inside a recorded call -------- */

static inline void rc_begin_request(const char* idiom) {
  rc_count = 0;
  rc_depth = 0;
  RC_PUT('@', idiom, 0, 0, (const char*)0);
}

/* Appends the request's lines to fd with one write() (O_APPEND keeps the
   requests of the two threads whole). */
static inline void rc_flush(int fd, long tid, long request) {
  static __thread char* text;
  enum { kLine = 200 };
  if (text == NULL) text = (char*)malloc((size_t)RC_MAX_EVENTS * kLine + 64);
  if (text == NULL || fd < 0) return;
  size_t used = 0;
  if (rc_count > RC_MAX_EVENTS) {
    used += (size_t)snprintf(text, 64, "%ld %ld E overflow 0 %u\n", tid, request, rc_count);
  } else {
    for (unsigned i = 0; i < rc_count; ++i) {
      const struct rc_event* e = &rc_events[i];
      int n;
      if (e->kind == '~') {
        n = snprintf(text + used, kLine, "%ld %ld ~ %s %d %s\n", tid, request, e->name, e->depth, e->extra_name);
      } else {
        n = snprintf(text + used, kLine, "%ld %ld %c %s %d 0x%lx\n", tid, request, e->kind, e->name, e->depth,
                     (unsigned long)e->extra);
      }
      if (n > 0 && n < kLine) used += (size_t)n;
    }
  }
  const char* data = text;
  while (used > 0) {
    ssize_t written = write(fd, data, used);
    if (written <= 0) break;
    data += written;
    used -= (size_t)written;
  }
}

#endif
