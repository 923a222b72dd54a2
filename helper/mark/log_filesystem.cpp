#include "mark/log_filesystem.h"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <cstring>

namespace xref {
namespace {

struct PseudoFilesystem {
  unsigned long magic;
  const char* name;
};

// Filesystems whose files are the kernel's or a process's state, not
// stored text. tmpfs, ramfs and pstore (the kernel's saved logs) are not
// among them: logs live there.
constexpr PseudoFilesystem kPseudoFilesystems[] = {
    {PROC_SUPER_MAGIC, "procfs"},     {SYSFS_MAGIC, "sysfs"},
    {DEBUGFS_MAGIC, "debugfs"},       {TRACEFS_MAGIC, "tracefs"},
    {CGROUP_SUPER_MAGIC, "cgroupfs"}, {CGROUP2_SUPER_MAGIC, "cgroup2"},
    {BPF_FS_MAGIC, "bpffs"},          {SECURITYFS_MAGIC, "securityfs"},
    {SELINUX_MAGIC, "selinuxfs"},     {SMACK_MAGIC, "smackfs"},
    {EFIVARFS_MAGIC, "efivarfs"},     {0x62656570, "configfs"},
    {0x65735543, "fusectl"},          {BINFMTFS_MAGIC, "binfmt_misc"},
    {0x19800202, "mqueue"},           {NSFS_MAGIC, "nsfs"},
    {ANON_INODE_FS_MAGIC, "anon_inodefs"},
};

}  // namespace

Result<void> check_log_filesystem(int fd, const std::string& path) {
  struct statfs filesystem {};
  if (fstatfs(fd, &filesystem) != 0) {
    return make_error(ErrorCode::file_error, "cannot tell the filesystem of --mark-file " + path + ": " +
                                                 std::strerror(errno));
  }
  for (const PseudoFilesystem& pseudo : kPseudoFilesystems) {
    if (static_cast<unsigned long>(filesystem.f_type) != pseudo.magic) continue;
    return make_error(ErrorCode::invalid_argument,
                      "--mark-file " + path + " is on " + pseudo.name +
                          ", a pseudo filesystem: its files are the kernel's or a process's state, not a log",
                      "give the log file an application writes, e.g. /var/log/app.log");
  }
  return {};
}

}  // namespace xref
