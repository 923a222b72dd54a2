#include "xprof/frames.h"

#include <algorithm>

#include "demangle.h"
#include "hex.h"
#include "number_parse.h"

namespace xref {

uint64_t location_named_address(const ProfileLocation& location) {
  return location.return_address && location.address != 0 ? location.address - 1 : location.address;
}

FrameKey frame_key(const Profile& profile, uint32_t location) {
  const ProfileLocation& where = profile.locations.at(location);
  if (where.function) return FrameKey{FrameKey::Kind::function, *where.function};
  return FrameKey{FrameKey::Kind::address, 0, where.module, location_named_address(where)};
}

std::string frame_name(const Profile& profile, const FrameKey& key) {
  switch (key.kind) {
    case FrameKey::Kind::function: return profile.functions.at(key.function).name;
    case FrameKey::Kind::kernel: return "[kernel]";
    case FrameKey::Kind::address: break;
  }
  return address_frame_name(profile, key.module, key.address);
}

std::string address_frame_name(const Profile& profile, uint32_t module, uint64_t address) {
  if (module >= profile.modules.size()) return "[unknown " + to_hex(address) + "]";
  return module_address_name(profile.modules[module].path, address);
}

std::string module_address_name(const std::string& module_path, uint64_t address) {
  return module_path.substr(module_path.rfind('/') + 1) + "+" + to_hex(address);
}

bool function_has_symbol(const Profile& profile, const ProfileFunction& function) {
  return function.module >= profile.modules.size() ||
         function.name != module_address_name(profile.modules[function.module].path, function.start);
}

std::string frame_module(const Profile& profile, const FrameKey& key) {
  uint32_t module = key.module;
  if (key.kind == FrameKey::Kind::kernel) return "[kernel]";
  if (key.kind == FrameKey::Kind::function) module = profile.functions.at(key.function).module;
  return module < profile.modules.size() ? profile.modules[module].path : "";
}

std::vector<FrameKey> stack_path(const Profile& profile, const ProfileStack& stack) {
  std::vector<FrameKey> path;
  path.reserve(stack.locations.size() + 1);
  for (auto location = stack.locations.rbegin(); location != stack.locations.rend(); ++location) {
    path.push_back(frame_key(profile, *location));
  }
  if (stack.in_kernel) path.push_back(kernel_frame());
  return path;
}

std::optional<uint32_t> executable_module(const Profile& profile) {
  if (profile.modules.empty()) return std::nullopt;
  const auto text = [&](const char* key) {
    const auto found = profile.process.is_object() ? profile.process.find(key) : profile.process.end();
    return profile.process.is_object() && found != profile.process.end() && found->is_string()
               ? found->get<std::string>()
               : std::string();
  };
  const std::string build_id = text("build_id");
  const std::string exe_path = text("exe_path");
  for (uint32_t index = 0; index < profile.modules.size(); ++index) {
    if (!build_id.empty() && profile.modules[index].build_id == build_id) return index;
  }
  for (uint32_t index = 0; index < profile.modules.size(); ++index) {
    if (!exe_path.empty() && profile.modules[index].path == exe_path) return index;
  }
  return 0;
}

std::vector<uint32_t> functions_named(const Profile& profile, const std::string& name) {
  std::vector<uint32_t> found;
  if (name.rfind("0x", 0) == 0) {
    auto va = parse_u64(name, "address");
    if (!va) return found;
    const std::optional<uint32_t> executable = executable_module(profile);
    for (int pass = 0; pass < 2 && found.empty(); ++pass) {
      for (uint32_t index = 0; index < profile.functions.size(); ++index) {
        const ProfileFunction& function = profile.functions[index];
        if (pass == 0 && function.module != executable) continue;
        const bool holds = *va == function.start || (*va > function.start && *va - function.start < function.size);
        if (holds) found.push_back(index);
      }
    }
    return found;
  }
  for (uint32_t index = 0; index < profile.functions.size(); ++index) {
    const ProfileFunction& function = profile.functions[index];
    if (function.name == name || function.raw_name == name || without_parameters(function.name) == name) {
      found.push_back(index);
    }
  }
  return found;
}

}  // namespace xref
