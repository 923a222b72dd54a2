// The modules of a capture: every file the target mapped executable while
// it was sampled (kept when unmapped again, so late stacks still name them),
// and for --callers dwarf their unwind tables (shared/cfi_table.h) in the
// program's `unwind_rows` map with the live mappings in `mappings`
// (shared/profile_abi.h).
//
// Tables are compiled per module, keyed by build-id (the same library under
// two paths is compiled once), the executable's and libc's at start (every
// stack passes through them), the others when the program first meets
// them (its ring request). /proc/PID/maps is read again when a sample's pc
// misses every mapping (a dlopen) and on a timer.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "elf_image.h"
#include "proc_maps.h"
#include "profile_abi.h"
#include "result.h"
#include "xprof/profile.h"

struct bpf_map;

namespace xref {

struct CaptureModule {
  ProfileModule profile;  // path, build-id, load bias, mappings, unwind table state
  uint32_t dev_major = 0;
  uint32_t dev_minor = 0;
  uint64_t inode = 0;
  std::string open_path;  // /proc/PID/map_files/... (the bytes mapped)
  std::shared_ptr<const ElfImage> image;  // null when it could not be opened
  bool main_executable = false;
  bool mapped = true;  // in the last maps read
  // The table in `unwind_rows`.
  uint32_t table_state = XREF_TABLE_ABSENT;
  uint32_t table_first = 0;
  uint64_t table_origin = 0;
};

// Where a live pc falls: the module and its static VA.
struct ModuleAddress {
  uint32_t module = kNoModule;
  uint64_t static_va = 0;
};

class CaptureModules {
 public:
  CaptureModules(pid_t pid, bool dwarf) : pid_(pid), dwarf_(dwarf) {}
  ~CaptureModules();
  CaptureModules(const CaptureModules&) = delete;
  CaptureModules& operator=(const CaptureModules&) = delete;

  // Reads /proc/PID/maps: new modules appended, mappings brought up to date.
  // True when the executable mappings changed.
  Result<bool> refresh();
  const std::vector<CaptureModule>& modules() const { return modules_; }
  std::optional<ModuleAddress> locate(uint64_t live_pc) const;
  // Rows the unwind_rows map should hold: the modules' CFI, estimated.
  uint32_t estimated_rows() const;

  // --callers dwarf: the program's maps, once loaded.
  void bind(bpf_map* rows, bpf_map* mappings, uint32_t capacity);
  // Compiles and loads the executable's and libc's tables.
  void load_eager_tables();
  // A request from the program's ring: loads that module's table.
  void on_request(const xref_profile_request& request);
  // Writes the live mappings and their tables' state into `mappings`.
  void publish();
  uint32_t rows_used() const { return rows_used_; }
  uint64_t tables_compiled() const { return tables_compiled_; }

 private:
  void load_table(uint32_t module);
  std::optional<uint32_t> module_of_file(uint32_t dev_major, uint32_t dev_minor, uint64_t inode) const;
  // The vDSO: no file to open, so its image is copied out of the process
  // (/proc/PID/mem) into a temporary file, removed with this object.
  void add_vdso(const MapEntry& mapping);

  pid_t pid_ = 0;
  bool dwarf_ = false;
  std::vector<CaptureModule> modules_;
  std::vector<xref_profile_mapping> live_;  // what publish() writes, sorted by start
  bpf_map* rows_map_ = nullptr;
  bpf_map* mappings_map_ = nullptr;
  uint32_t capacity_ = 0;
  uint32_t rows_used_ = 0;
  uint32_t generation_ = 0;
  uint64_t tables_compiled_ = 0;
  // build-id -> the module whose table holds its rows
  std::map<std::string, uint32_t> by_build_id_;
  std::string vdso_file_;
};

}  // namespace xref
