/* Shared by bpf/mark_write.bpf.c and the helper (helper/mark_write_clock):
 * one record per completed write(2)/pwrite/writev to a watched file. */
#ifndef XREF_MARK_WRITE_H
#define XREF_MARK_WRITE_H

#include <linux/types.h>

#define XREF_MARK_MAX_FILES 8
#define XREF_MARK_NAME_MAX 64 /* the followed file's name, with its NUL */

struct xref_mark_file {
  __u64 ino;
  __u32 dev; /* the kernel's encoding: major << 20 | minor */
  __u32 pad;
};

struct xref_mark_write {
  __u64 timestamp_ns; /* bpf_ktime_get_ns() when the write returned */
  __u64 ino;
  __u32 dev;
  __u32 pad;
  __u64 end;    /* file position after the write: it covered [end - length, end) */
  __u64 length;
};

#endif
