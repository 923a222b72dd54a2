#include "serve/helper_names.h"

#include <algorithm>

#include "process/target.h"
#include "render/helper_names.h"

namespace xref::serve {

namespace {

// The helper's names of one process, with the process it reads them from.
class ProcessNames final : public render::Names {
 public:
  explicit ProcessNames(Target target) : target_(std::move(target)), names_(target_.space) {}
  std::optional<render::Place> place(const render::CodeAddress& address) override { return names_.place(address); }

 private:
  Target target_;
  render::HelperNames names_;
};

}  // namespace

NamesCache::HelperNames helper_names_factory() {
  return [](pid_t pid) -> std::unique_ptr<render::Names> {
    auto target = open_target({pid, ""});
    if (!target) return nullptr;
    return std::make_unique<ProcessNames>(std::move(*target));
  };
}

std::vector<std::string> function_candidates(pid_t pid, const std::string& partial) {
  std::vector<std::string> candidates;
  auto target = open_target({pid, ""});
  if (!target) return candidates;
  std::string prefix = partial;
  std::string module_prefix;
  const Module* module = target->space.main_module();
  if (const size_t colon = partial.find(':'); colon != std::string::npos && partial.compare(colon, 2, "::") != 0) {
    module = target->space.find_module(partial.substr(0, colon));
    module_prefix = partial.substr(0, colon + 1);
    prefix = partial.substr(colon + 1);
  }
  if (module == nullptr) return candidates;
  auto image = target->space.image(*module);
  if (!image) return candidates;
  const auto found = (*image)->functions_named_if([&](std::string_view name) {
    return name.substr(0, prefix.size()) == prefix || name.substr(0, 2) == "_Z";
  });
  for (const FunctionSymbol* function : found) {
    const std::string& name = function->demangled.empty() ? function->name : function->demangled;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    // Without the parameter list: what a user types.
    const std::string typed = name.substr(0, name.find('('));
    candidates.push_back(module_prefix + typed);
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
  return candidates;
}

}  // namespace xref::serve
