#include "profile/capture_modules.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "address_space.h"
#include "cfi_table.h"
#include "proc_maps.h"

namespace xref {
namespace {

// Rows per byte of .eh_frame, measured on libc, libstdc++ and gcc/clang
// -O2 executables (about one row per 3 to 5 bytes); rounded up so a
// dlopen'ed library still fits.
constexpr uint64_t kEhFrameBytesPerRow = 2;
constexpr uint64_t kMinRows = 1u << 16;

constexpr const char* kVdso = "[vdso]";

bool is_libc(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return name.rfind("libc.so", 0) == 0 || name.rfind("libc-", 0) == 0;
}

}  // namespace

CaptureModules::~CaptureModules() {
  if (!vdso_file_.empty()) ::unlink(vdso_file_.c_str());
}

void CaptureModules::add_vdso(const MapEntry& mapping) {
  for (CaptureModule& module : modules_) {
    if (module.profile.path == kVdso) {
      module.mapped = true;
      return;
    }
  }
  std::vector<uint8_t> bytes(mapping.size());
  const std::string mem = "/proc/" + std::to_string(pid_) + "/mem";
  const int fd = ::open(mem.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t got = ::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(mapping.start));
  ::close(fd);
  if (got != static_cast<ssize_t>(bytes.size())) return;
  char path[] = "/tmp/xref-vdso-XXXXXX";
  const int out = ::mkstemp(path);
  if (out < 0) return;
  const bool written = ::write(out, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  ::close(out);
  vdso_file_ = path;
  if (!written) return;
  auto image = ElfImage::open(vdso_file_);
  if (!image) return;
  CaptureModule module;
  module.profile.path = kVdso;
  module.open_path = vdso_file_;
  module.image = std::make_shared<const ElfImage>(std::move(*image));
  module.profile.build_id = module.image->build_id();
  module.profile.unwind_table = dwarf_ ? "not_needed" : "not_used";
  // Its one PT_LOAD starts at file offset 0, at the mapping's start.
  for (const LoadSegment& segment : module.image->segments()) {
    if (segment.offset == 0) module.profile.load_bias = mapping.start - segment.vaddr;
  }
  module.profile.mappings.push_back({mapping.start, mapping.end, 0});
  modules_.push_back(std::move(module));
}

std::optional<uint32_t> CaptureModules::module_of_file(uint32_t dev_major, uint32_t dev_minor, uint64_t inode) const {
  for (uint32_t index = 0; index < modules_.size(); ++index) {
    const CaptureModule& module = modules_[index];
    if (module.inode == inode && module.dev_major == dev_major && module.dev_minor == dev_minor) return index;
  }
  return std::nullopt;
}

Result<bool> CaptureModules::refresh() {
  auto maps = read_maps(pid_);
  if (!maps) return maps.error();
  struct stat exe {};
  const std::string exe_path = "/proc/" + std::to_string(pid_) + "/exe";
  if (stat(exe_path.c_str(), &exe) != 0) std::memset(&exe, 0, sizeof exe);
  AddressSpace space = AddressSpace::from_maps(*maps, pid_, major(exe.st_dev), minor(exe.st_dev), exe.st_ino);
  bool changed = false;
  for (CaptureModule& module : modules_) module.mapped = false;
  for (const Module& mapped : space.modules()) {
    std::vector<const MapEntry*> executable;
    for (const MapEntry& mapping : mapped.mappings) {
      if (mapping.executable()) executable.push_back(&mapping);
    }
    if (executable.empty()) continue;
    std::optional<uint32_t> index = module_of_file(mapped.dev_major, mapped.dev_minor, mapped.inode);
    if (!index) {
      CaptureModule module;
      module.profile.path = mapped.path;
      module.dev_major = mapped.dev_major;
      module.dev_minor = mapped.dev_minor;
      module.inode = mapped.inode;
      module.open_path = mapped.open_path;
      module.main_executable = mapped.main_executable;
      module.profile.unwind_table = dwarf_ ? "not_needed" : "not_used";
      if (auto image = space.image(mapped)) {
        module.image = *image;
        module.profile.build_id = module.image->build_id();
      }
      index = static_cast<uint32_t>(modules_.size());
      modules_.push_back(std::move(module));
    }
    CaptureModule& module = modules_[*index];
    module.mapped = true;
    if (auto bias = space.load_bias(mapped)) module.profile.load_bias = *bias;
    for (const MapEntry* mapping : executable) {
      const bool known = std::any_of(module.profile.mappings.begin(), module.profile.mappings.end(),
                                     [&](const ProfileMapping& seen) { return seen.start == mapping->start; });
      if (known) continue;
      module.profile.mappings.push_back({mapping->start, mapping->end, mapping->offset});
      changed = true;
    }
  }
  for (const MapEntry& mapping : *maps) {
    if (mapping.pseudo() && mapping.path == kVdso && mapping.executable()) {
      const size_t before = modules_.size();
      add_vdso(mapping);
      changed = changed || modules_.size() != before;
    }
  }
  if (changed && mappings_map_ != nullptr) publish();
  return changed;
}

std::optional<ModuleAddress> CaptureModules::locate(uint64_t live_pc) const {
  for (uint32_t index = 0; index < modules_.size(); ++index) {
    for (const ProfileMapping& mapping : modules_[index].profile.mappings) {
      if (live_pc >= mapping.start && live_pc < mapping.end) {
        return ModuleAddress{index, live_pc - modules_[index].profile.load_bias};
      }
    }
  }
  return std::nullopt;
}

uint32_t CaptureModules::estimated_rows() const {
  uint64_t bytes = 0;
  for (const CaptureModule& module : modules_) {
    if (module.image == nullptr) continue;
    if (const SectionInfo* section = module.image->section(".eh_frame")) bytes += section->size;
    if (const SectionInfo* section = module.image->section(".debug_frame")) bytes += section->size;
  }
  const uint64_t rows = std::max<uint64_t>(kMinRows, bytes / kEhFrameBytesPerRow * 2);
  return static_cast<uint32_t>(std::min<uint64_t>(rows, XREF_PROFILE_DEFAULT_ROWS));
}

void CaptureModules::bind(bpf_map* rows, bpf_map* mappings, uint32_t capacity) {
  rows_map_ = rows;
  mappings_map_ = mappings;
  capacity_ = capacity;
}

void CaptureModules::load_eager_tables() {
  for (uint32_t index = 0; index < modules_.size(); ++index) {
    const std::string& path = modules_[index].profile.path;
    if (modules_[index].main_executable || is_libc(path) || path == kVdso) load_table(index);
  }
  publish();
}

void CaptureModules::on_request(const xref_profile_request& request) {
  if (request.module >= modules_.size()) return;
  const uint32_t state = modules_[request.module].table_state;
  if (state == XREF_TABLE_ABSENT || state == XREF_TABLE_REQUESTED) load_table(request.module);
  // Published even when already loaded: the request may have come from a
  // state an older publish() reset.
  publish();
}

void CaptureModules::load_table(uint32_t index) {
  if (!dwarf_ || rows_map_ == nullptr) return;
  CaptureModule& module = modules_[index];
  const std::string& build_id = module.profile.build_id;
  if (!build_id.empty()) {
    if (auto twin = by_build_id_.find(build_id); twin != by_build_id_.end() && twin->second != index) {
      const CaptureModule& loaded = modules_[twin->second];
      module.table_state = loaded.table_state;
      module.table_first = loaded.table_first;
      module.table_origin = loaded.table_origin;
      module.profile.unwind_table = loaded.profile.unwind_table;
      module.profile.unwind_rows = loaded.profile.unwind_rows;
      module.profile.unwind_error = loaded.profile.unwind_error;
      return;
    }
  }
  auto table = compile_cfi_table(module.open_path);
  ++tables_compiled_;
  if (!table) {
    module.table_state = XREF_TABLE_NO_CFI;
    module.profile.unwind_table = "failed";
    module.profile.unwind_error = table.error().message;
  } else if (table->rows.empty()) {
    module.table_state = XREF_TABLE_NO_CFI;
    module.profile.unwind_table = "no_cfi";
  } else if (static_cast<uint64_t>(rows_used_) + table->rows.size() > capacity_) {
    module.table_state = XREF_TABLE_NO_ROOM;
    module.profile.unwind_table = "no_room";
    module.profile.unwind_error = std::to_string(table->rows.size()) + " rows; " +
                                  std::to_string(capacity_ - rows_used_) + " of " + std::to_string(capacity_) +
                                  " left in the table map";
  } else {
    const uint32_t count = static_cast<uint32_t>(table->rows.size());
    std::vector<uint32_t> keys(count);
    for (uint32_t row = 0; row < count; ++row) keys[row] = rows_used_ + row;
    uint32_t written = count;
    LIBBPF_OPTS(bpf_map_batch_opts, options);
    int status = bpf_map_update_batch(bpf_map__fd(rows_map_), keys.data(), table->rows.data(), &written, &options);
    if (status != 0) {
      // Kernels without batch updates of arrays: one row at a time.
      status = 0;
      for (uint32_t row = 0; row < count && status == 0; ++row) {
        status = bpf_map_update_elem(bpf_map__fd(rows_map_), &keys[row], &table->rows[row], BPF_ANY);
      }
    }
    if (status != 0) {
      module.table_state = XREF_TABLE_NO_CFI;
      module.profile.unwind_table = "failed";
      module.profile.unwind_error = std::string("writing the rows into the table map failed: ") + std::strerror(errno);
    } else {
      module.table_state = XREF_TABLE_LOADED;
      module.table_first = rows_used_;
      module.table_origin = table->origin;
      module.profile.unwind_table = "loaded";
      module.profile.unwind_rows = count;
      rows_used_ += count;
    }
  }
  if (!build_id.empty()) by_build_id_[build_id] = index;
}

void CaptureModules::publish() {
  if (mappings_map_ == nullptr) return;
  live_.clear();
  for (uint32_t index = 0; index < modules_.size(); ++index) {
    const CaptureModule& module = modules_[index];
    if (!module.mapped) continue;
    for (const ProfileMapping& mapping : module.profile.mappings) {
      xref_profile_mapping entry{};
      entry.start = mapping.start;
      entry.end = mapping.end;
      entry.table_base = module.profile.load_bias + module.table_origin;
      entry.table_first = module.table_first;
      entry.table_rows = module.table_state == XREF_TABLE_LOADED ? module.profile.unwind_rows : 0;
      entry.module = index;
      entry.table_state = module.table_state;
      live_.push_back(entry);
    }
  }
  std::sort(live_.begin(), live_.end(),
            [](const xref_profile_mapping& a, const xref_profile_mapping& b) { return a.start < b.start; });
  // Mappings of a module unmapped meanwhile were kept in its list: drop the
  // ones another module's mapping now overlaps.
  std::vector<xref_profile_mapping> kept;
  for (const xref_profile_mapping& entry : live_) {
    if (!kept.empty() && entry.start < kept.back().end) continue;
    kept.push_back(entry);
  }
  auto value = std::make_unique<xref_profile_mappings>();
  std::memset(value.get(), 0, sizeof *value);
  value->count = static_cast<uint32_t>(std::min<size_t>(kept.size(), XREF_PROFILE_MAX_MAPPINGS));
  value->generation = ++generation_;
  std::copy_n(kept.begin(), value->count, value->mapping);
  const uint32_t key = 0;
  bpf_map__update_elem(mappings_map_, &key, sizeof key, value.get(), sizeof *value, BPF_ANY);
}

}  // namespace xref
