// --mark-file: when each write to the followed log returned, so a log line
// can be placed before or after a window's start exactly (a poll alone only
// knows it was written between two reads). Raw syscall tracepoints (no
// tracefs, no kprobes, no fexit needed): at the entry of write, pwrite64,
// writev, pwritev and pwritev2 the descriptor's file is looked up and kept
// for the thread when it is a watched file (device, inode); at the exit its
// position says which bytes the call wrote.
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "mark_write.h"

/* Only the fields read here, relocated against the kernel's BTF. */
struct super_block {
  __u32 s_dev;
} __attribute__((preserve_access_index));

struct inode {
  unsigned long i_ino;
  struct super_block *i_sb;
} __attribute__((preserve_access_index));

struct qstr {
  const unsigned char *name;
} __attribute__((preserve_access_index));

struct dentry {
  struct dentry *d_parent;
  struct qstr d_name;
  struct inode *d_inode;
} __attribute__((preserve_access_index));

struct path {
  struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
  struct path f_path;
  struct inode *f_inode;
  long long f_pos;
} __attribute__((preserve_access_index));

struct fdtable {
  unsigned int max_fds;
  struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
  struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
  struct files_struct *files;
} __attribute__((preserve_access_index));

/* x86-64 syscall numbers */
#define NR_WRITE 1
#define NR_PWRITE64 18
#define NR_WRITEV 20
#define NR_PWRITEV 296
#define NR_PWRITEV2 328

struct pending_write {
  __u64 file;     /* struct file *, read again at the exit */
  __s64 position; /* the explicit offset of a pwrite; -1: the file position */
  struct xref_mark_file key;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, XREF_MARK_MAX_FILES);
  __type(key, struct xref_mark_file);
  __type(value, __u8);
} watched SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32); /* thread id */
  __type(value, struct pending_write);
} pending SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} writes SEC(".maps");

__u64 lost_writes = 0;

/* The followed path's directory and name: a file created there under that
 * name (after a rotation) is timed from its first write, before user space
 * has seen it and added its inode to `watched`. */
__u64 path_dir_ino = 0;
__u32 path_dir_dev = 0;
char path_name[XREF_MARK_NAME_MAX] = {};

static __always_inline int named_like_the_path(struct file *file) {
  if (path_dir_ino == 0) return 0;
  struct dentry *dentry = BPF_CORE_READ(file, f_path.dentry);
  if (BPF_CORE_READ(dentry, d_parent, d_inode, i_ino) != path_dir_ino ||
      BPF_CORE_READ(dentry, d_parent, d_inode, i_sb, s_dev) != path_dir_dev) {
    return 0;
  }
  char name[XREF_MARK_NAME_MAX] = {};
  const unsigned char *text = BPF_CORE_READ(dentry, d_name.name);
  if (bpf_probe_read_kernel_str(name, sizeof name, text) <= 0) return 0;
  for (int i = 0; i < XREF_MARK_NAME_MAX; ++i) {
    if (name[i] != path_name[i]) return 0;
    if (name[i] == 0) return 1;
  }
  return 0;
}

SEC("raw_tracepoint/sys_enter")
int mark_sys_enter(struct bpf_raw_tracepoint_args *ctx) {
  const long id = (long)ctx->args[1];
  if (id != NR_WRITE && id != NR_PWRITE64 && id != NR_WRITEV && id != NR_PWRITEV && id != NR_PWRITEV2) return 0;
  struct pt_regs regs;
  if (bpf_probe_read_kernel(&regs, sizeof regs, (void *)ctx->args[0]) != 0) return 0;
  const unsigned int fd = (unsigned int)regs.rdi;
  struct task_struct *task = (struct task_struct *)bpf_get_current_task();
  struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file **fds = BPF_CORE_READ(fdt, fd);
  struct file *file = 0;
  if (bpf_probe_read_kernel(&file, sizeof file, &fds[fd]) != 0 || !file) return 0;
  struct pending_write write = {};
  write.key.ino = BPF_CORE_READ(file, f_inode, i_ino);
  write.key.dev = BPF_CORE_READ(file, f_inode, i_sb, s_dev);
  if (!bpf_map_lookup_elem(&watched, &write.key) && !named_like_the_path(file)) return 0;
  write.file = (__u64)file;
  write.position = -1;
  if (id == NR_PWRITE64 || id == NR_PWRITEV || id == NR_PWRITEV2) write.position = (__s64)regs.r10;
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  bpf_map_update_elem(&pending, &tid, &write, BPF_ANY);
  return 0;
}

SEC("raw_tracepoint/sys_exit")
int mark_sys_exit(struct bpf_raw_tracepoint_args *ctx) {
  const __u32 tid = (__u32)bpf_get_current_pid_tgid();
  struct pending_write *write = bpf_map_lookup_elem(&pending, &tid);
  if (!write) return 0;
  const long ret = (long)ctx->args[1];
  long long end = 0;
  if (write->position >= 0) {
    end = write->position + ret;
  } else {
    struct file *file = (struct file *)write->file;
    end = BPF_CORE_READ(file, f_pos);
  }
  if (ret > 0) {
    struct xref_mark_write *out = bpf_ringbuf_reserve(&writes, sizeof *out, 0);
    if (out) {
      out->timestamp_ns = bpf_ktime_get_ns();
      out->ino = write->key.ino;
      out->dev = write->key.dev;
      out->pad = 0;
      out->end = (__u64)end;
      out->length = (__u64)ret;
      bpf_ringbuf_submit(out, BPF_RB_NO_WAKEUP);
    } else {
      __sync_fetch_and_add(&lost_writes, 1);
    }
  }
  bpf_map_delete_elem(&pending, &tid);
  return 0;
}

char LICENSE[] SEC("license") = "GPL";
