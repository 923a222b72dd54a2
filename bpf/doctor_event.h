/* The record bpf/doctor.bpf.c sends to user space (shared with C++). */
#ifndef XREF_DOCTOR_EVENT_H
#define XREF_DOCTOR_EVENT_H

#include <linux/types.h>

struct doctor_event {
  __u32 tgid;
  __u32 tid;
  __u64 cookie; /* the attach cookie: proves cookies reach the program */
  __u64 ip;     /* live address that fired */
  __u64 arg0;   /* %rdi: the value the self-test passed */
};

#endif
