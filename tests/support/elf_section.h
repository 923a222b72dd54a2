// Reads one section of an ELF file with libelf, independently of the code
// under test, so parsers of section contents can be fed real bytes.
#pragma once

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace xref::test {

struct SectionBytes {
  std::vector<uint8_t> bytes;
  uint64_t addr = 0;  // sh_addr: the static VA of bytes[0]
};

inline std::optional<SectionBytes> read_elf_section(const std::string& path, const char* name) {
  if (elf_version(EV_CURRENT) == EV_NONE) return std::nullopt;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<SectionBytes> result;
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t names_index = 0;
  if (elf && elf_getshdrstrndx(elf, &names_index) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr header;
      if (!gelf_getshdr(scn, &header)) continue;
      const char* section_name = elf_strptr(elf, names_index, header.sh_name);
      if (!section_name || std::strcmp(section_name, name) != 0) continue;
      Elf_Data* data = elf_rawdata(scn, nullptr);
      if (!data || !data->d_buf) break;
      const auto* bytes = static_cast<const uint8_t*>(data->d_buf);
      result = SectionBytes{std::vector<uint8_t>(bytes, bytes + data->d_size), header.sh_addr};
      break;
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return result;
}

}  // namespace xref::test
