#include "serve/helper_names.h"

#include <algorithm>

#include "demangle.h"
#include "process/target.h"
#include "render/helper_names.h"
#include "sites/function_glob.h"

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
  // The functions `prefix*` matches, as --functions 'prefix*' would expand it.
  for (const FunctionSymbol* function : functions_matching(**image, glob_literal(prefix) + "*")) {
    // Without the parameter list: what a user types; else the name it answers to.
    std::vector<std::string> spellings{without_parameters(function->demangled), function->name};
    spellings.insert(spellings.end(), function->aliases.begin(), function->aliases.end());
    for (const std::string& typed : spellings) {
      if (typed.compare(0, prefix.size(), prefix) != 0) continue;
      candidates.push_back(module_prefix + typed);
      break;
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
  return candidates;
}

}  // namespace xref::serve
