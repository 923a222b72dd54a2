#include "process/ifunc_binding.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "hex.h"

namespace xref {
namespace {

// "memcpy@GLIBC_2.2.5" -> "memcpy": relocations name symbols without versions.
std::string unversioned(const std::string& name) { return name.substr(0, name.find('@')); }

std::optional<uint64_t> read_pointer(int mem_fd, uint64_t live_va) {
  uint64_t value = 0;
  if (pread(mem_fd, &value, sizeof value, static_cast<off_t>(live_va)) != static_cast<ssize_t>(sizeof value)) {
    return std::nullopt;
  }
  return value;
}

const char* slot_kind_name(GotSlot::Kind kind) {
  switch (kind) {
    case GotSlot::Kind::jump_slot: return "JUMP_SLOT";
    case GotSlot::Kind::glob_dat: return "GLOB_DAT";
    case GotSlot::Kind::irelative: return "IRELATIVE";
  }
  return "slot";
}

// The functions of the module that look like implementations of `base`:
// "__strlen_avx2", "__strlen_sse2" for strlen (not "__strlen_chk").
std::vector<std::string> implementation_candidates(const ElfImage& image, const std::string& base,
                                                   uint64_t resolver) {
  const std::string prefix = "__" + base + "_";
  std::vector<std::string> names;
  for (const FunctionSymbol* symbol : image.functions_named_if(
           [&](std::string_view name) { return name.starts_with(prefix); })) {
    const FunctionSymbol& function = *symbol;
    if (function.start == resolver || function.ifunc) continue;
    // Any of its names: the one it goes by may be another implementation's
    // (__memmove_avx_unaligned_erms is also __memcpy_avx_unaligned_erms).
    std::vector<std::string_view> spellings = {function.name};
    spellings.insert(spellings.end(), function.aliases.begin(), function.aliases.end());
    for (const std::string_view name : spellings) {
      if (!name.starts_with(prefix) || name.ends_with("_ifunc")) continue;
      if (base.find("chk") == std::string::npos && name.starts_with(prefix + "chk")) continue;
      names.emplace_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

Result<IfuncBinding> bound_ifunc(const AddressSpace& space, pid_t pid, const Module& provider,
                                 const ElfImage& provider_image, const FunctionSymbol& ifunc, const std::string& what) {
  std::vector<std::string> names = {unversioned(ifunc.name)};
  for (const std::string& alias : ifunc.aliases) names.push_back(unversioned(alias));

  const std::string mem_path = "/proc/" + std::to_string(pid) + "/mem";
  const int mem_fd = ::open(mem_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (mem_fd < 0) {
    const int saved = errno;
    return make_error(saved == EACCES || saved == EPERM ? ErrorCode::permission_denied : ErrorCode::file_error,
                      what + ": cannot read the GOT of PID " + std::to_string(pid) + " (" + mem_path + "): " +
                          std::strerror(saved),
                      "run as root or as the process's user");
  }

  // Slots of importers first (the binding calls from outside go through),
  // then the provider's own IRELATIVE slots (filled at load time).
  // Each module's relocations, read once (they are not kept by ElfImage).
  std::vector<std::vector<GotSlot>> slots_of(space.modules().size());
  for (size_t i = 0; i < space.modules().size(); ++i) {
    if (auto image = space.image(space.modules()[i])) slots_of[i] = (*image)->got_slots();
  }
  std::optional<IfuncBinding> found;
  for (int pass = 0; pass < 2 && !found; ++pass) {
    for (size_t index = 0; index < space.modules().size(); ++index) {
      const Module& module = space.modules()[index];
      for (const GotSlot& slot : slots_of[index]) {
        const bool wanted = pass == 0 ? slot.kind != GotSlot::Kind::irelative &&
                                            std::find(names.begin(), names.end(), slot.symbol) != names.end()
                                      : slot.kind == GotSlot::Kind::irelative && &module == &provider &&
                                            slot.resolver == ifunc.start;
        if (!wanted) continue;
        auto live_slot = space.live_from_static(module, slot.va);
        if (!live_slot) continue;
        auto value = read_pointer(mem_fd, *live_slot);
        if (!value) continue;
        // Unbound (lazy) slots point back into the importer's PLT; slots
        // bound to another module's definition are not this function.
        const LiveAddress live = space.resolve_live(*value);
        if (live.candidates.empty() || live.candidates.front().module != &provider) continue;
        const FunctionSymbol* code = provider_image.function_at(live.candidates.front().static_va);
        if (code == nullptr || code->start == ifunc.start) continue;
        found = IfuncBinding{*code, std::string(slot_kind_name(slot.kind)) + " " +
                                        (slot.kind == GotSlot::Kind::irelative ? "slot" : "of " + slot.symbol) +
                                        " in " + module.name() + " at " + to_hex(slot.va)};
        break;
      }
      if (found) break;
    }
  }
  ::close(mem_fd);
  if (found) return *found;

  const std::string base = unversioned(ifunc.name);
  const auto candidates = implementation_candidates(provider_image, base, ifunc.start);
  std::string list;
  for (size_t i = 0; i < candidates.size() && i < 12; ++i) list += (i == 0 ? "" : ", ") + candidates[i];
  if (candidates.size() > 12) list += ", ...";
  const std::string module = provider.name();
  if (candidates.empty()) {
    return make_error(ErrorCode::invalid_argument,
                      what + " is a GNU IFUNC (its address is a resolver, not the code that runs) and no GOT slot "
                             "of the process is bound to it yet (lazy binding: not called so far)",
                      "pass the implementation as " + module + ":0xVA (install " + module +
                          "'s debug symbols to name it), or trace once the process has called " + base);
  }
  return make_error(ErrorCode::invalid_argument,
                    what + " is a GNU IFUNC (its address is a resolver, not the code that runs) and no GOT slot of "
                           "the process is bound to it yet (lazy binding: not called so far); its implementations "
                           "in " + module + ": " + list,
                    "pass one of them, e.g. " + module + ":" + candidates.front() +
                        ", or trace once the process has called " + base);
}

std::string bound_code_name(const std::string& name, const std::string& implementation) {
  if (implementation.empty()) return name;
  return name + " is bound to " + implementation + " here, and " + implementation;
}

}  // namespace xref
