#include "proc_maps.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace xref {
namespace {

TEST(ProcMaps, ParsesEveryShapeTheKernelPrints) {
  const std::string text =
      "55d0c0a00000-55d0c0a01000 r--p 00000000 fd:01 1234                       /usr/bin/my app\n"
      "55d0c0a01000-55d0c0a02000 r-xp 00001000 fd:01 1234                       /usr/bin/my app\n"
      "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
      "7f0000001000-7f0000002000 r-xp 00002000 08:11 99                         /tmp/new\\012line.so (deleted)\n"
      "7f0000002000-7f0000003000 rw-s 00000000 00:05 7                          /SYSV00000000 (deleted)\n"
      "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
      "7fff00000000-7fff00002000 r-xp 00000000 00:00 0                          [vdso]\n"
      "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
  auto maps = parse_maps(text);
  ASSERT_TRUE(maps) << maps.error().message;
  ASSERT_EQ(maps->size(), 8u);

  const MapEntry& text_mapping = (*maps)[1];
  EXPECT_EQ(text_mapping.start, 0x55d0c0a01000u);
  EXPECT_EQ(text_mapping.end, 0x55d0c0a02000u);
  EXPECT_EQ(text_mapping.offset, 0x1000u);
  EXPECT_EQ(text_mapping.dev_major, 0xfdu);
  EXPECT_EQ(text_mapping.dev_minor, 1u);
  EXPECT_EQ(text_mapping.inode, 1234u);
  EXPECT_EQ(text_mapping.path, "/usr/bin/my app");  // the space survives
  EXPECT_TRUE(text_mapping.executable());
  EXPECT_FALSE(text_mapping.deleted);

  EXPECT_FALSE((*maps)[2].file_backed());
  EXPECT_EQ((*maps)[2].path, "");
  EXPECT_EQ((*maps)[2].label(), "[anonymous]");

  const MapEntry& deleted = (*maps)[3];
  EXPECT_TRUE(deleted.deleted);
  EXPECT_EQ(deleted.path, "/tmp/new\\012line.so");  // kept as reported
  EXPECT_EQ(deleted.unescaped_path(), "/tmp/new\nline.so");

  EXPECT_TRUE((*maps)[4].shared());
  EXPECT_TRUE((*maps)[4].deleted);
  EXPECT_TRUE((*maps)[5].pseudo());
  EXPECT_EQ((*maps)[6].path, "[vdso]");
  EXPECT_EQ((*maps)[7].start, 0xffffffffff600000u);

  EXPECT_EQ(find_mapping(*maps, 0x55d0c0a01fffu), &(*maps)[1]);
  EXPECT_EQ(find_mapping(*maps, 0x55d0c0a02000u), nullptr);
  EXPECT_EQ(find_mapping(*maps, 0x1000u), nullptr);
}

TEST(ProcMaps, RejectsMalformedLinesWithTheColumn) {
  auto bad_range = parse_maps("55d0c0a00000+55d0c0a01000 r--p 00000000 fd:01 1 /x\n");
  ASSERT_FALSE(bad_range);
  EXPECT_EQ(bad_range.error().column, 13);
  EXPECT_FALSE(parse_maps("2000-1000 r--p 00000000 fd:01 1 /x\n"));
  EXPECT_FALSE(parse_maps("1000-2000 r--p zz fd:01 1 /x\n"));
  EXPECT_FALSE(parse_maps("1000-2000 r--p 0 fd01 1 /x\n"));
}

// A real mapping of a file whose name has spaces, parentheses and a newline,
// then deleted while mapped: read back from this process's own maps.
TEST(ProcMaps, LiveHostilePathsSurvive) {
  const std::string path = "/tmp/xref maps (test)\nname-" + std::to_string(getpid()) + ".bin";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  void* mapped = mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, fd, 4096);
  ASSERT_NE(mapped, MAP_FAILED);
  close(fd);
  const auto start = reinterpret_cast<uint64_t>(mapped);

  auto maps = read_maps(getpid());
  ASSERT_TRUE(maps);
  const MapEntry* entry = find_mapping(*maps, start);
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->unescaped_path(), path);
  EXPECT_EQ(entry->offset, 4096u);
  EXPECT_FALSE(entry->deleted);

  ASSERT_EQ(unlink(path.c_str()), 0);
  maps = read_maps(getpid());
  ASSERT_TRUE(maps);
  entry = find_mapping(*maps, start);
  ASSERT_NE(entry, nullptr);
  EXPECT_TRUE(entry->deleted);
  EXPECT_EQ(entry->unescaped_path(), path);
  munmap(mapped, 8192);
}

}  // namespace
}  // namespace xref
