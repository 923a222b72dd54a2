#include "sites/function_names.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "sites/probe_site_check.h"
#include "demangle.h"
#include "hex.h"
#include "number_parse.h"
#include "process/ifunc_binding.h"

namespace xref {

bool names_static_va(const std::string& text) { return !text.empty() && text[0] >= '0' && text[0] <= '9'; }

std::pair<std::string, std::string> split_module(const std::string& text) {
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0) --depth;
    if (c != ':' || depth > 0) continue;  // "[abi:cxx11]" belongs to the name
    if (i + 1 < text.size() && text[i + 1] == ':') {
      ++i;  // "::" belongs to a C++/Rust name
      continue;
    }
    return {text.substr(0, i), text.substr(i + 1)};
  }
  return {"", text};
}

namespace {

// Edit distance of a and b when it is at most `most`, else most + 1; one
// row at a time, given up as soon as a row's best exceeds `most`.
size_t bounded_distance(std::string_view a, std::string_view b, size_t most) {
  if ((a.size() > b.size() ? a.size() - b.size() : b.size() - a.size()) > most) return most + 1;
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    size_t best = row[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
      best = std::min(best, row[j]);
    }
    if (best > most) return most + 1;
  }
  return row[b.size()];
}

// The function names nearest to a misspelt `text`: edit distance at most a
// third of its length (1 to 3), best first, at most three. A huge symbol
// table is read only up to kNamesCompared names, so the hint costs little.
std::vector<std::string> names_like(const ElfImage& image, std::string_view text) {
  constexpr size_t kNamesCompared = 1'000'000;
  constexpr size_t kLongestCompared = 256;
  const size_t most = std::clamp<size_t>(text.size() / 3, 1, 3);
  std::vector<std::pair<size_t, std::string>> near;
  size_t compared = 0;
  (void)image.functions_named_if([&](std::string_view name) {
    if (++compared > kNamesCompared || name.size() > kLongestCompared) return false;
    const size_t distance = bounded_distance(text, name, most);
    if (distance <= most && distance > 0) near.emplace_back(distance, std::string(name));
    return false;
  });
  std::sort(near.begin(), near.end());
  near.erase(std::unique(near.begin(), near.end()), near.end());
  std::vector<std::string> names;
  for (const auto& [distance, name] : near) {
    if (names.size() == 3) break;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace

std::string nm_command(const ElfImage& image) {
  return image.has_symtab() || image.symbols_path() != image.path() ? "nm -C" : "nm -D -C";
}

Result<FunctionSymbol> resolve_function(const ElfImage& image, const std::string& text, const std::string& what) {
  if (names_static_va(text)) {
    auto va = parse_u64(text, what + " address");
    if (!va) return va.error();
    if (const FunctionSymbol* function = image.function_at(*va)) return *function;
    const FunctionSymbol* containing = image.function_containing(*va);
    if (containing != nullptr) {
      return make_error(ErrorCode::invalid_argument,
                        what + " " + to_hex(*va) + " is inside " + containing->demangled + " (starts at " +
                            to_hex(containing->start) + "), not at a function start",
                        "give the function's start address or its name");
    }
    if (auto data = data_not_code(image, *va, what)) return *data;
    return make_error(ErrorCode::address_unmapped, what + " " + to_hex(*va) + " is not a known function start in " +
                                                       image.path(),
                      "addresses are static VAs as nm/objdump print them; check with `xref resolve`");
  }
  const auto found = image.match_functions(text);
  if (found.empty()) {
    const std::vector<std::string> near = names_like(image, text);
    std::string guess;
    for (size_t i = 0; i < near.size(); ++i) guess += (i == 0 ? "" : i + 1 == near.size() ? " or " : ", ") + near[i];
    return make_error(ErrorCode::invalid_argument, what + ": no function named '" + text + "'",
                      (guess.empty() ? "" : "did you mean " + guess + "? ") + "use the name " + nm_command(image) +
                          " prints (with or without its parameter list), or a static VA");
  }
  if (found.size() > 1) {
    std::string list;
    for (size_t i = 0; i < found.size() && i < 8; ++i) {
      list += std::string(i == 0 ? " " : ", ") + found[i].function->demangled + " at " + to_hex(found[i].function->start);
    }
    if (found.size() > 8) list += ", ...";
    return make_error(ErrorCode::invalid_argument, what + ": '" + text + "' names several functions:" + list,
                      "give the full name " + nm_command(image) + " prints or the static VA of the one you mean");
  }
  // The name the user gave, not another alias at that address ("getpid",
  // not "__getpid"): output prints it.
  FunctionSymbol function = *found.front().function;
  if (const std::string& spelled = found.front().spelled; spelled != function.name) {
    std::erase(function.aliases, spelled);
    function.aliases.push_back(function.name);
    function.name = spelled;
    function.demangled = demangle(spelled);
  }
  return function;
}

// A static VA that is no code of its module but a live address of the
// process: the error that converts it.
std::optional<Error> live_address_as_static(ProbeModules& modules, uint64_t va, const std::string& what) {
  const Target& target = modules.target();
  const LiveAddress live = target.space.resolve_live(va);
  if (live.candidates.empty() || !live.candidates.front().file_backed || live.candidates.front().module == nullptr) {
    return std::nullopt;
  }
  const StaticCandidate& candidate = live.candidates.front();
  const std::string static_text = candidate.module->name() + ":" + to_hex(candidate.static_va);
  std::string symbolic;
  if (auto image = target.space.image(*candidate.module)) {
    if (const FunctionSymbol* function = (*image)->function_containing(candidate.static_va)) {
      symbolic = (candidate.module == modules[0].module ? "" : candidate.module->name() + ":") + function->demangled +
                 (candidate.static_va == function->start ? "" : "+" + to_hex(candidate.static_va - function->start));
    }
  }
  return make_error(ErrorCode::address_unmapped,
                    what + ": " + to_hex(va) + " is a live address of this process: its static VA is " + static_text +
                        (symbolic.empty() ? "" : " (" + symbolic + ")"),
                    "in the CLI write " + static_text + (symbolic.empty() ? "" : " or " + symbolic) +
                        ", or pass it from a debugger");
}

Result<ModuleFunction> resolve_function_name(ProbeModules& modules, const std::string& text, const std::string& what) {
  const auto [module_name, rest] = split_module(text);
  uint32_t module_index = 0;
  if (!module_name.empty()) {
    auto index = modules.index_of_named(module_name, what);
    if (!index) return index.error();
    module_index = *index;
  }
  const ProbeModule& module = modules[module_index];
  auto symbol = resolve_function(*module.image, rest, what);
  if (!symbol && names_static_va(rest) && symbol.error().code == ErrorCode::address_unmapped) {
    if (auto va = parse_u64(rest, what); va && module.image->function_containing(*va) == nullptr) {
      if (auto live = live_address_as_static(modules, *va, what + " " + text)) return *live;
    }
  }
  if (!symbol) return symbol.error();
  ModuleFunction function;
  static_cast<FunctionSymbol&>(function) = *symbol;
  function.module_index = module_index;
  if (symbol->ifunc) {
    // Probe the code the resolver chose, under the name the user gave.
    const Target& target = modules.target();
    auto bound = bound_ifunc(target.space, target.process.pid(), *module.module, *module.image, *symbol,
                             what + " " + text);
    if (!bound) return bound.error();
    static_cast<FunctionSymbol&>(function) = bound->implementation;
    function.name = symbol->name;
    function.demangled = symbol->demangled;
    function.implementation = bound->implementation.demangled;
    function.ifunc_slot = bound->slot;
  }
  return function;
}

std::string ifunc_warning(const std::string& given, const ModuleFunction& function, const std::string& verb) {
  return given + " is a GNU IFUNC: " + verb + " " + function.implementation +
         ", the implementation the process bound (" + function.ifunc_slot + ")";
}

std::optional<ModuleFunction> plt_target(ProbeModules& modules, uint32_t module_index, const FunctionSymbol& stub) {
  std::string name = stub.name;
  if (const size_t at = name.find("@plt"); at != std::string::npos) name.erase(at);
  const Target& target = modules.target();
  for (const Module& module : target.space.modules()) {
    if (&module == modules[module_index].module || module.name().rfind("ld-linux", 0) == 0) continue;
    auto image = target.space.image(module);
    if (!image) continue;
    for (const FunctionSymbol* found : (*image)->find_functions(name)) {
      if (found->source == SymbolSource::plt || !found->has_name(name)) continue;
      ModuleFunction function;
      static_cast<FunctionSymbol&>(function) = *found;
      // A GNU IFUNC: what the process bound, never the resolver.
      if (found->ifunc) {
        auto bound = bound_ifunc(target.space, target.process.pid(), module, **image, *found, stub.name);
        if (!bound) return std::nullopt;
        static_cast<FunctionSymbol&>(function) = bound->implementation;
      }
      function.module_index = modules.index_of(&module, *image);
      return function;
    }
  }
  return std::nullopt;
}

}  // namespace xref
