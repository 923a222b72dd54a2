#include "profile/stack_symbols.h"

#include <tuple>

#include "xprof/frames.h"

namespace xref {
namespace {

// `__libc_start_main@@GLIBC_2.34` as perf and gdb name it: the version a
// symbol table adds to a versioned definition is not part of the function's
// name (raw_name keeps it).
std::string without_symbol_version(const std::string& name) {
  const size_t at = name.find('@');
  return at == std::string::npos || at == 0 ? name : name.substr(0, at);
}

class ProfileBuilder {
 public:
  ProfileBuilder(Profile& profile, const CaptureModules& modules) : profile_(profile), modules_(modules) {}

  uint32_t location(uint64_t live_pc, bool return_address) {
    ProfileLocation location;
    location.return_address = return_address;
    location.address = live_pc;
    if (auto at = modules_.locate(live_pc)) {
      location.module = at->module;
      location.address = at->static_va;
    }
    const auto key = std::make_tuple(location.module, location.address, return_address);
    if (auto known = locations_.find(key); known != locations_.end()) return known->second;
    location.function = function(location.module, return_address ? location.address - 1 : location.address);
    const uint32_t index = static_cast<uint32_t>(profile_.locations.size());
    profile_.locations.push_back(location);
    locations_.emplace(key, index);
    return index;
  }

 private:
  std::optional<uint32_t> function(uint32_t module, uint64_t static_va) {
    if (module == kNoModule) return std::nullopt;
    const CaptureModule& owner = modules_.modules()[module];
    if (owner.image == nullptr) return std::nullopt;
    const FunctionSymbol* symbol = owner.image->function_containing(static_va);
    if (symbol == nullptr) return std::nullopt;
    const auto key = std::make_pair(module, symbol->start);
    if (auto known = functions_.find(key); known != functions_.end()) return known->second;
    ProfileFunction function;
    function.module = module;
    if (symbol->is_fde_range()) {
      // Code the module's CFI makes a function but no symbol names (a
      // stripped executable's, a library's static function): the module's
      // file name and the function's start, `app+0x1230`: one function
      // however many of its addresses were sampled (perf says [unknown]).
      function.name = module_address_name(owner.profile.path, symbol->start);
      function.raw_name = function.name;
    } else {
      function.name = without_symbol_version(symbol->demangled);
      function.raw_name = symbol->name;
    }
    function.start = symbol->start;
    function.size = symbol->size;
    const uint32_t index = static_cast<uint32_t>(profile_.functions.size());
    profile_.functions.push_back(function);
    functions_.emplace(key, index);
    return index;
  }

  Profile& profile_;
  const CaptureModules& modules_;
  std::map<std::tuple<uint32_t, uint64_t, bool>, uint32_t> locations_;
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> functions_;
};

}  // namespace

StackEnd stack_end_of(uint8_t end) {
  switch (end) {
    case XREF_STACK_COMPLETE: return StackEnd::complete;
    case XREF_STACK_LEAF_ONLY: return StackEnd::leaf_only;
    case XREF_STACK_TRUNCATED: return StackEnd::truncated;
    case XREF_STACK_NO_MAPPING: return StackEnd::no_mapping;
    case XREF_STACK_TABLE_PENDING: return StackEnd::table_pending;
    case XREF_STACK_NO_CFI: return StackEnd::no_cfi;
    case XREF_STACK_UNSUPPORTED_RULE: return StackEnd::unsupported_rule;
    case XREF_STACK_READ_FAILED: return StackEnd::read_failed;
    case XREF_STACK_BAD_FRAME: return StackEnd::bad_frame;
    case XREF_STACK_NO_USER_REGS: return StackEnd::no_user_regs;
    case XREF_STACK_TABLE_NO_ROOM: return StackEnd::table_no_room;
    default: return StackEnd::bad_frame;
  }
}

void fill_profile_stacks(Profile& profile, const CaptureModules& modules, const std::map<uint64_t, RawStack>& stacks,
                         const std::map<std::pair<uint64_t, uint32_t>, uint64_t>& counts) {
  ProfileBuilder builder(profile, modules);
  std::map<uint64_t, uint32_t> stack_index;
  for (const auto& [key, count] : counts) {
    const auto& [id, tid] = key;
    auto raw = stacks.find(id);
    if (raw == stacks.end() || count == 0) continue;
    auto [entry, inserted] = stack_index.try_emplace(id, static_cast<uint32_t>(profile.stacks.size()));
    if (inserted) {
      ProfileStack stack;
      stack.end = stack_end_of(raw->second.end);
      stack.in_kernel = raw->second.in_kernel;
      for (size_t frame = 0; frame < raw->second.pcs.size(); ++frame) {
        stack.locations.push_back(builder.location(raw->second.pcs[frame], frame > 0));
      }
      profile.stacks.push_back(std::move(stack));
    }
    profile.samples.push_back({entry->second, tid, count});
  }
}

}  // namespace xref
