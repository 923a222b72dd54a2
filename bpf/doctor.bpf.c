// xref doctor's self-test: a uprobe program that reports each hit in the
// helper's own process through a ring buffer, with its attach cookie. It
// proves, by doing it, that BPF programs load, that uprobes (perf_event and
// uprobe_multi) fire, that cookies arrive and that the ring buffer works.
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "doctor_event.h"

const volatile __u32 target_tgid = 0;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 4096);
} events SEC(".maps");

SEC("uprobe")
int doctor_probe(struct pt_regs *ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  if ((__u32)(id >> 32) != target_tgid) return 0;
  struct doctor_event *event = bpf_ringbuf_reserve(&events, sizeof(*event), 0);
  if (!event) return 0;
  event->tgid = (__u32)(id >> 32);
  event->tid = (__u32)id;
  event->cookie = bpf_get_attach_cookie(ctx);
  event->ip = PT_REGS_IP(ctx);
  event->arg0 = PT_REGS_PARM1(ctx);
  bpf_ringbuf_submit(event, 0);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
