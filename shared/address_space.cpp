#include "address_space.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "hex.h"

namespace xref {
namespace {

constexpr uint64_t kPageSize = 4096;

uint32_t permission_flags(const MapEntry& mapping) {
  return (mapping.readable() ? 4u : 0u) | (mapping.writable() ? 2u : 0u) | (mapping.executable() ? 1u : 0u);
}

std::string map_files_name(const MapEntry& mapping) {
  return to_hex(mapping.start).substr(2) + "-" + to_hex(mapping.end).substr(2);
}

}  // namespace

const char* address_kind_name(AddressKind kind) {
  switch (kind) {
    case AddressKind::file_backed: return "file_backed";
    case AddressKind::zero_fill: return "zero_fill";
    case AddressKind::anonymous: return "anonymous";
    case AddressKind::pseudo: return "pseudo";
    case AddressKind::unmapped: return "unmapped";
  }
  return "unmapped";
}

std::string Module::name() const {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

AddressSpace AddressSpace::from_maps(std::vector<MapEntry> maps, pid_t pid, uint64_t exe_dev_major,
                                     uint64_t exe_dev_minor, uint64_t exe_inode) {
  AddressSpace space;
  space.pid_ = pid;
  space.maps_ = std::move(maps);
  for (const MapEntry& mapping : space.maps_) {
    if (!mapping.file_backed()) continue;
    auto same_file = [&](const Module& module) {
      return module.inode == mapping.inode && module.dev_major == mapping.dev_major &&
             module.dev_minor == mapping.dev_minor;
    };
    auto existing = std::find_if(space.modules_.begin(), space.modules_.end(), same_file);
    if (existing == space.modules_.end()) {
      Module module;
      module.path = mapping.path;
      module.dev_major = mapping.dev_major;
      module.dev_minor = mapping.dev_minor;
      module.inode = mapping.inode;
      module.main_executable = mapping.inode == exe_inode && mapping.dev_major == exe_dev_major &&
                               mapping.dev_minor == exe_dev_minor;
      const std::string proc = "/proc/" + std::to_string(pid);
      module.open_path = module.main_executable ? proc + "/exe" : proc + "/map_files/" + map_files_name(mapping);
      space.modules_.push_back(std::move(module));
      existing = space.modules_.end() - 1;
    }
    existing->mappings.push_back(mapping);
  }
  space.images_.resize(space.modules_.size());
  space.image_errors_.resize(space.modules_.size());
  return space;
}

Result<AddressSpace> AddressSpace::read(const ProcessHandle& process) {
  auto maps = read_maps(process.pid());
  if (!maps) return maps.error();
  const ProcessIdentity& identity = process.identity();
  AddressSpace space = from_maps(std::move(*maps), process.pid(), major(identity.exe_device),
                                 minor(identity.exe_device), identity.exe_inode);
  // Some filesystems (overlayfs) report another device in maps than stat
  // does; fall back to the executable's path.
  if (space.main_module() == nullptr) {
    for (Module& module : space.modules_) {
      if (module.path == identity.exe_path && module.inode == identity.exe_inode) {
        module.main_executable = true;
        module.open_path = process.exe_link();
      }
    }
  }
  return space;
}

const Module* AddressSpace::main_module() const {
  for (const Module& module : modules_) {
    if (module.main_executable) return &module;
  }
  return nullptr;
}

const Module* AddressSpace::find_module(std::string_view name) const {
  if (name.empty()) return nullptr;
  for (const Module& module : modules_) {
    if (module.path == name || module.name() == name) return &module;
  }
  for (const Module& module : modules_) {
    auto opened = image(module);
    if (opened && (*opened)->soname() == name) return &module;
  }
  // Another name of the same file: a symlink beside it ("libsqlite3.so.0"
  // for "libsqlite3.so.0.8.6", as ldd prints it) or a path to it, as seen
  // from the process's root.
  const std::string root = "/proc/" + std::to_string(pid_) + "/root";
  for (const Module& module : modules_) {
    const std::string path = module.mappings.front().unescaped_path();
    const size_t slash = path.rfind('/');
    if (path.empty() || path[0] != '/' || slash == std::string::npos) continue;
    const std::string other = name.find('/') != std::string_view::npos
                                  ? root + std::string(name)
                                  : root + path.substr(0, slash + 1) + std::string(name);
    struct stat file, named;
    if (::stat((root + path).c_str(), &file) == 0 && ::stat(other.c_str(), &named) == 0 &&
        file.st_dev == named.st_dev && file.st_ino == named.st_ino) {
      return &module;
    }
  }
  return nullptr;
}

const Module* AddressSpace::module_of(const MapEntry& mapping) const {
  for (const Module& module : modules_) {
    if (mapping.file_backed() && module.inode == mapping.inode && module.dev_major == mapping.dev_major &&
        module.dev_minor == mapping.dev_minor) {
      return &module;
    }
  }
  return nullptr;
}

Result<std::shared_ptr<const ElfImage>> AddressSpace::image(const Module& module) const {
  const size_t index = static_cast<size_t>(&module - modules_.data());
  if (images_[index]) return images_[index];
  if (!image_errors_[index].empty()) return make_error(ErrorCode::elf_error, image_errors_[index]);
  auto opened = ElfImage::open(module.open_path);
  if (!opened && opened.error().code != ErrorCode::elf_error) {
    // map_files needs CAP_SYS_ADMIN; the path through the target's root works otherwise.
    opened = ElfImage::open("/proc/" + std::to_string(pid_) + "/root" + module.mappings.front().unescaped_path());
  }
  if (!opened) {
    image_errors_[index] = module.path + ": " + opened.error().message;
    return opened.error();
  }
  images_[index] = std::make_shared<const ElfImage>(std::move(*opened));
  return images_[index];
}

void AddressSpace::set_main_image(std::shared_ptr<const ElfImage> image) {
  for (size_t i = 0; i < modules_.size(); ++i) {
    if (modules_[i].main_executable) images_[i] = image;
  }
}

std::optional<uint64_t> AddressSpace::load_bias(const Module& module) const {
  auto opened = image(module);
  if (!opened) return std::nullopt;
  const ElfImage& elf = **opened;
  // A mapping starting at file offset pgoff shows the page holding pgoff; the
  // segment whose page-aligned file extent holds it gives its static VA.
  for (const MapEntry& mapping : module.mappings) {
    for (const LoadSegment& segment : elf.segments()) {
      const uint64_t page_offset = segment.offset & ~(kPageSize - 1);
      if (mapping.offset >= page_offset && mapping.offset < segment.offset + std::max<uint64_t>(segment.filesz, 1)) {
        const uint64_t static_start = segment.vaddr + (mapping.offset - segment.offset);  // wraps correctly
        return mapping.start - static_start;
      }
    }
  }
  return std::nullopt;
}

LiveAddress AddressSpace::resolve_live(uint64_t live_va) const {
  LiveAddress result;
  result.live_va = live_va;
  const MapEntry* mapping = find_mapping(maps_, live_va);
  if (mapping == nullptr) return result;
  result.mapping = *mapping;

  if (mapping->file_backed()) {
    const uint64_t file_offset = live_va - mapping->start + mapping->offset;
    result.file_offset = file_offset;
    const Module* module = module_of(*mapping);
    if (module == nullptr) return result;
    auto opened = image(*module);
    if (!opened) {
      result.kind = AddressKind::file_backed;
      return result;
    }
    const ElfImage& elf = **opened;
    for (const LoadSegment& segment : elf.segments()) {
      if (!segment.contains_offset(file_offset)) continue;
      StaticCandidate candidate{module, segment.vaddr + (file_offset - segment.offset), true, segment.flags,
                                segment.flags == permission_flags(*mapping)};
      result.candidates.push_back(candidate);
    }
    if (!result.candidates.empty()) {
      std::stable_sort(result.candidates.begin(), result.candidates.end(),
                       [](const auto& a, const auto& b) { return a.permissions_agree > b.permissions_agree; });
      result.kind = AddressKind::file_backed;
      return result;
    }
  }

  // Not in any file extent: a zero-filled segment tail or .bss of some module?
  for (const Module& module : modules_) {
    auto bias = load_bias(module);
    auto opened = image(module);
    if (!bias || !opened) continue;
    const uint64_t static_va = live_va - *bias;
    for (const LoadSegment& segment : (*opened)->segments()) {
      if (segment.contains_va(static_va) && !segment.va_is_file_backed(static_va)) {
        result.candidates.push_back(StaticCandidate{&module, static_va, false, segment.flags,
                                                    segment.flags == permission_flags(*mapping)});
      }
    }
  }
  if (!result.candidates.empty()) {
    result.kind = AddressKind::zero_fill;
  } else if (mapping->pseudo()) {
    result.kind = AddressKind::pseudo;
  } else if (mapping->file_backed()) {
    result.kind = AddressKind::file_backed;  // a file mapping outside every PT_LOAD (e.g. not an ELF)
  } else {
    result.kind = AddressKind::anonymous;
  }
  return result;
}

Result<uint64_t> AddressSpace::live_from_static(const Module& module, uint64_t static_va) const {
  auto opened = image(module);
  if (!opened) return opened.error();
  const ElfImage& elf = **opened;
  auto file_offset = elf.file_offset_of(static_va);
  if (!file_offset) return file_offset.error();
  const LoadSegment* segment = elf.segment_for_va(static_va);
  // Two segments can share a file page (.rodata's last page is also the
  // first of the RELRO part of the data segment, both r-- once RELRO is
  // applied), so the file offset alone can name two mappings: the one that
  // keeps the module's load bias is the one at this VA.
  const std::optional<uint64_t> bias = load_bias(module);
  const MapEntry* best = nullptr;
  for (const MapEntry& mapping : module.mappings) {
    if (*file_offset < mapping.offset || *file_offset - mapping.offset >= mapping.size()) continue;
    if (bias && mapping.start + (*file_offset - mapping.offset) - static_va == *bias) {
      best = &mapping;
      break;
    }
    if (best == nullptr || (segment != nullptr && permission_flags(mapping) == segment->flags)) best = &mapping;
  }
  if (best == nullptr) {
    return make_error(ErrorCode::address_unmapped,
                      "static VA " + to_hex(static_va) + " of " + module.name() + " (file offset " +
                          to_hex(*file_offset) + ") is not mapped in the process",
                      "the process has not mapped that part of the file");
  }
  return best->start + *file_offset - best->offset;
}

}  // namespace xref
