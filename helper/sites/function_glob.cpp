#include "sites/function_glob.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>

#include "demangle.h"

namespace xref {
namespace {

bool glob_matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// A function answers to the glob under any name nm or nm -C shows for it.
bool function_matches(const std::string& pattern, const FunctionSymbol& function) {
  if (glob_matches(pattern, function.name) || glob_matches(pattern, function.demangled)) return true;
  if (glob_matches(pattern, without_parameters(function.demangled))) return true;
  return std::any_of(function.aliases.begin(), function.aliases.end(),
                     [&](const std::string& alias) { return glob_matches(pattern, alias); });
}

// The compiler's split-off parts ("f.cold", "f [clone .cold]") are parts of
// a function, not functions a user means.
bool is_split_part(const FunctionSymbol& function) {
  return function.demangled.find(" [clone") != std::string::npos || function.name.find(".cold") != std::string::npos;
}

// Up to three names that the glob matches when its case is ignored: a
// "did you mean" for 'Set*' or 'SET*'.
std::vector<std::string> near_names(const std::string& pattern, const std::vector<const FunctionSymbol*>& functions) {
  std::vector<std::string> near;
  for (const FunctionSymbol* function : functions) {
    if (near.size() == 3) break;
    if (fnmatch(pattern.c_str(), without_parameters(function->demangled).c_str(), FNM_CASEFOLD) == 0) {
      near.push_back(without_parameters(function->demangled));
    }
  }
  return near;
}

}  // namespace

std::vector<const FunctionSymbol*> functions_matching(const ElfImage& image, const std::string& pattern) {
  std::map<uint64_t, const FunctionSymbol*> matched;  // by start: aliases once
  for (const FunctionSymbol* function : image.all_functions()) {
    if (function->is_fde_range() || is_split_part(*function)) continue;
    if (function_matches(pattern, *function)) matched.emplace(function->start, function);
  }
  std::vector<const FunctionSymbol*> functions;
  for (const auto& [start, function] : matched) functions.push_back(function);
  return functions;
}

std::string glob_literal(const std::string& text) {
  std::string glob;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') glob += '\\';
    glob += c;
  }
  return glob;
}

bool is_function_glob(const std::string& text) {
  const std::string rest = split_module(text).second;
  return rest.find_first_of("*?[") != std::string::npos;
}

Result<GlobExpansion> expand_function_glob(ProbeModules& modules, const std::string& text, const std::string& what,
                                           size_t limit, const std::string& limit_option) {
  const auto [module, pattern] = split_module(text);
  uint32_t module_index = 0;
  if (!module.empty()) {
    auto index = modules.index_of_named(module, what + " " + text);
    if (!index) return index.error();
    module_index = *index;
  }
  const ElfImage& image = modules.image(module_index);
  const std::string module_name = modules[module_index].module->name();
  const std::vector<const FunctionSymbol*> matched = functions_matching(image, pattern);
  if (matched.empty()) {
    const std::vector<std::string> near = near_names(pattern, image.all_functions());
    std::string hint = "list the names with nm -C " + modules[module_index].module->open_path;
    if (!near.empty()) {
      hint = "did you mean";
      for (size_t i = 0; i < near.size(); ++i) hint += (i == 0 ? " " : ", ") + near[i];
      hint += "? (globs are case-sensitive)";
    }
    return make_error(ErrorCode::invalid_argument,
                      what + " " + text + ": no function of " + module_name + " matches '" + pattern + "'", hint);
  }
  if (matched.size() > limit) {
    return make_error(ErrorCode::limit_exceeded,
                      what + " " + text + ": " + std::to_string(matched.size()) + " functions of " + module_name +
                          " match; the limit is " + std::to_string(limit),
                      "narrow the pattern, or raise the limit with " + limit_option + " " +
                          std::to_string(matched.size()));
  }
  GlobExpansion expansion;
  expansion.pattern = text;
  std::map<uint64_t, bool> resolved;  // by the start the process runs: an IFUNC's implementation
  for (const FunctionSymbol* function : matched) {
    const std::string name = (module.empty() ? "" : module + ":") + function->name;
    auto found = resolve_function_name(modules, name, what);
    if (!found && function->ifunc) {
      // An IFUNC the process has not bound yet has no code to probe; the
      // rest of the glob still does.
      expansion.skipped.push_back(function->demangled);
      continue;
    }
    if (!found) return found.error();
    if (!resolved.emplace(found->start, true).second) continue;
    expansion.functions.push_back(std::move(*found));
  }
  return expansion;
}

std::string glob_skipped_warning(const GlobExpansion& expansion) {
  if (expansion.skipped.empty()) return "";
  std::string names;
  for (const std::string& name : expansion.skipped) names += (names.empty() ? "" : ", ") + name;
  return "glob_ifunc_unbound: " + expansion.pattern + ": " + std::to_string(expansion.skipped.size()) +
         " GNU IFUNCs it matched are not bound by the process yet (not called so far) and were left out: " + names;
}

}  // namespace xref
