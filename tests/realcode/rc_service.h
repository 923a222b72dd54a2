/* main() of a real-code program: a small service that runs requests on
   worker threads once the tracer is attached, recording each request.

     PROGRAM --record PATH --go-file PATH [--requests N] [--threads N]
             [--interval-us N]

   Prints "pid N", "anchor serve 0xLIVE" (the live address of the request
   entry point, from which the checker gets the load bias) and "ready", then
   waits until the go file exists, runs N requests on each thread (request
   ids worker * 1000 + n), prints "done" and waits for SIGTERM. It dies with
   its parent (PR_SET_PDEATHSIG), so a checker that dies leaves nothing.

   The including program defines, before including this file:
     RC_SERVE(id)        runs request id, returns a long
     RC_SERVE_ADDRESS    the address printed as "anchor serve"
     rc_idiom_of(id)     the idiom request id runs (a string) */
#ifndef RC_SERVICE_H
#define RC_SERVICE_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "rc_record.h"

static int rc_record_fd = -1;
static long rc_requests = 20;
static long rc_threads = 2;
static long rc_interval_us = 500;
static const char* rc_go_file = NULL;
static volatile long rc_result_sink;

static void rc_sleep_us(long us) {
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void* rc_worker(void* arg) {
  const long worker = (long)(intptr_t)arg;
  const long tid = (long)gettid();
  for (long n = 0; n < rc_requests; ++n) {
    const long id = worker * 1000 + n;
    rc_begin_request(rc_idiom_of(id));
    rc_result_sink = RC_SERVE(id);
    rc_flush(rc_record_fd, tid, id);
    rc_sleep_us(rc_interval_us);
  }
  return NULL;
}

static int rc_parse_number(const char* text, long low, long high, long* out) {
  char* end = NULL;
  if (text == NULL) return 0;
  errno = 0;
  const long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value > high) return 0;
  *out = value;
  return 1;
}

int main(int argc, char** argv) {
  const char* record_path = NULL;
  for (int i = 1; i < argc; i += 2) {
    const char* value = i + 1 < argc ? argv[i + 1] : NULL;
    int ok = value != NULL;
    if (ok && strcmp(argv[i], "--record") == 0) {
      record_path = value;
    } else if (ok && strcmp(argv[i], "--go-file") == 0) {
      rc_go_file = value;
    } else if (ok && strcmp(argv[i], "--requests") == 0) {
      ok = rc_parse_number(value, 1, 999, &rc_requests);
    } else if (ok && strcmp(argv[i], "--threads") == 0) {
      ok = rc_parse_number(value, 1, 8, &rc_threads);
    } else if (ok && strcmp(argv[i], "--interval-us") == 0) {
      ok = rc_parse_number(value, 0, 1000000, &rc_interval_us);
    } else {
      ok = 0;
    }
    if (!ok) {
      fprintf(stderr,
              "usage: %s --record PATH --go-file PATH [--requests N (1-999)] [--threads N (1-8)] "
              "[--interval-us N]\n",
              argv[0]);
      return 2;
    }
  }
  if (record_path == NULL || rc_go_file == NULL) {
    fprintf(stderr, "%s: --record and --go-file are required\n", argv[0]);
    return 2;
  }
  rc_record_fd = open(record_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (rc_record_fd < 0) {
    perror("--record");
    return 1;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  printf("pid %d\nanchor serve 0x%lx\nready\n", (int)getpid(), (unsigned long)(uintptr_t)(RC_SERVE_ADDRESS));
  fflush(stdout);

  /* The checker creates the go file once xref has attached every probe, so
     every request runs traced. */
  while (access(rc_go_file, F_OK) != 0) rc_sleep_us(2000);

  pthread_t workers[8];
  for (long i = 0; i < rc_threads; ++i) {
    if (pthread_create(&workers[i], NULL, rc_worker, (void*)(intptr_t)i) != 0) {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  }
  for (long i = 0; i < rc_threads; ++i) pthread_join(workers[i], NULL);
  printf("done\n");
  fflush(stdout);
  for (;;) pause(); /* until SIGTERM */
}

#endif
