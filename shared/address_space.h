// The three address spaces kept apart: a static VA (as in the ELF file and
// in nm/objdump), a file offset, and a live VA (in the running process).
// Every conversion goes through the mapping that owns the address, with the
// kernel's rule live = vm_start + file_offset - pgoff; there is no global
// subtraction. Where several readings are valid they are all kept.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "elf_image.h"
#include "proc_maps.h"
#include "process_identity.h"
#include "result.h"

namespace xref {

struct Module {
  std::string path;  // label as reported by maps
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  bool main_executable = false;
  std::vector<MapEntry> mappings;  // this file's mappings, ascending
  std::string open_path;           // /proc/PID/exe or /proc/PID/map_files/START-END

  std::string name() const;  // basename of path: "libc.so.6"
};

enum class AddressKind {
  file_backed,  // inside a file mapping and a PT_LOAD's file extent
  zero_fill,    // a module's PT_LOAD, past its file extent (.bss, segment tail)
  anonymous,    // an anonymous mapping no module accounts for
  pseudo,       // [vdso], [vvar], [stack], [heap] ...
  unmapped,     // no mapping holds it
};

const char* address_kind_name(AddressKind kind);

struct StaticCandidate {
  const Module* module = nullptr;
  uint64_t static_va = 0;
  bool file_backed = false;
  uint32_t segment_flags = 0;
  bool permissions_agree = false;  // the mapping's r/w/x equal the segment's flags
};

struct LiveAddress {
  uint64_t live_va = 0;
  AddressKind kind = AddressKind::unmapped;
  std::optional<MapEntry> mapping;
  std::optional<uint64_t> file_offset;
  std::vector<StaticCandidate> candidates;  // best first
};

class AddressSpace {
 public:
  // Reads the maps of a process and groups file mappings into modules.
  static Result<AddressSpace> read(const ProcessHandle& process);
  // For tests and offline use: a maps snapshot plus how to open each module.
  static AddressSpace from_maps(std::vector<MapEntry> maps, pid_t pid, uint64_t exe_dev_major,
                                uint64_t exe_dev_minor, uint64_t exe_inode);

  const std::vector<MapEntry>& maps() const { return maps_; }
  const std::vector<Module>& modules() const { return modules_; }
  const Module* main_module() const;
  // By the name maps gives it (basename "libc.so.6" or full path), its
  // DT_SONAME, or another name of the same file (a symlink beside it, as ldd
  // prints it, or a path to it).
  const Module* find_module(std::string_view name) const;
  const Module* module_of(const MapEntry& mapping) const;

  // The module's ELF image, opened through /proc so the bytes are the ones
  // mapped; cached. Fails when the file cannot be opened or parsed.
  Result<std::shared_ptr<const ElfImage>> image(const Module& module) const;
  // Use `image` for the main executable instead of opening /proc/PID/exe
  // (after --bin was verified to be the same bytes).
  void set_main_image(std::shared_ptr<const ElfImage> image);

  LiveAddress resolve_live(uint64_t live_va) const;
  // Static VA of `module` -> live VA through the mapping holding its file offset.
  Result<uint64_t> live_from_static(const Module& module, uint64_t static_va) const;
  // live - static for the mapping (the load bias / PIE slide), when known.
  std::optional<uint64_t> load_bias(const Module& module) const;

 private:
  std::vector<MapEntry> maps_;
  std::vector<Module> modules_;
  pid_t pid_ = 0;
  mutable std::vector<std::shared_ptr<const ElfImage>> images_;  // parallel to modules_
  mutable std::vector<std::string> image_errors_;
};

}  // namespace xref
