#include "sites/probe_modules.h"

#include <algorithm>

namespace xref {

Result<ProbeModules> ProbeModules::of_process(const Target& target) {
  const Module* main = target.space.main_module();
  if (main == nullptr) {
    return make_error(ErrorCode::internal, "the process's executable is not among its mappings");
  }
  auto image = target.space.image(*main);
  if (!image) return image.error();
  ProbeModules modules(target);
  modules.modules_.push_back(ProbeModule{main, *image});
  return modules;
}

uint32_t ProbeModules::index_of(const Module* module, std::shared_ptr<const ElfImage> image) {
  for (size_t i = 0; i < modules_.size(); ++i) {
    if (modules_[i].module == module) return static_cast<uint32_t>(i);
  }
  modules_.push_back(ProbeModule{module, std::move(image)});
  return static_cast<uint32_t>(modules_.size() - 1);
}

Result<uint32_t> ProbeModules::index_of_named(const std::string& name, const std::string& what) {
  const Module* module = target_->space.find_module(name);
  // The executable also answers to the name the process was started by (a
  // symlink: redis-server for redis-check-rdb).
  const std::string& started_as = target_->process.identity().started_as;
  if (module == nullptr && !started_as.empty() &&
      (name == started_as || name == started_as.substr(started_as.rfind('/') + 1))) {
    module = modules_.front().module;
  }
  if (module == nullptr) {
    std::string names;
    for (const Module& known : target_->space.modules()) {
      if (names.size() >= 200) continue;
      names += (names.empty() ? "" : ", ") + known.name();
      if (known.main_executable && !started_as.empty()) names += " (started as " + started_as + ")";
    }
    return make_error(ErrorCode::invalid_argument, what + ": the process has no module named '" + name + "'",
                      "name a module by its file name, soname or path; it has " + names);
  }
  const auto known = std::find_if(modules_.begin(), modules_.end(),
                                  [&](const ProbeModule& each) { return each.module == module; });
  if (known != modules_.end()) return static_cast<uint32_t>(known - modules_.begin());
  auto image = target_->space.image(*module);
  if (!image) return image.error();
  return index_of(module, *image);
}

}  // namespace xref
