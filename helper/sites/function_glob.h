// Function names with wildcards, as bpftrace users write them:
// `--functions 'set*'`, `probe 'libc.so.6:str*'`, `'set*Command'`. A glob
// (`*`, `?`, `[...]`, fnmatch(3) without flags) matches a function of one
// module (the executable, or the one named before ':') when it matches its
// stored name, its demangled name as nm -C prints it, or that without its
// parameter list. Each match resolves as the plain name would
// (resolve_function_name: a GNU IFUNC bound, an alias once).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "elf_image.h"
#include "result.h"
#include "sites/function_names.h"
#include "sites/probe_modules.h"

namespace xref {

// A glob's matches are refused above this unless the user raises the
// bound: each uprobe hit costs 16-25 us on these machines, and a pattern
// like 'libc.so.6:*' (about 3,000 functions) would put that on every libc
// call of the target, when what was meant was a few dozen.
inline constexpr size_t default_glob_limit = 1000;

// Whether the text after any "module:" has a wildcard: '*', '?' or '['.
bool is_function_glob(const std::string& text);

// The functions of `image` that `pattern` (a glob, no "module:") matches,
// by start, each once; the compiler's split-off parts (".cold") and FDE-only
// ranges left out. Shared by the expansion below and Tab completion.
std::vector<const FunctionSymbol*> functions_matching(const ElfImage& image, const std::string& pattern);
// `text` as a glob that matches only itself ('*', '?', '[' and '\\' escaped).
std::string glob_literal(const std::string& text);

struct GlobExpansion {
  std::string pattern;                    // as typed
  std::vector<ModuleFunction> functions;  // by start, each once
  // GNU IFUNCs it matched that the process has not bound yet (no code to
  // probe): left out, for the caller to warn about.
  std::vector<std::string> skipped;
};

// The warning for `expansion.skipped`, "" when nothing was skipped.
std::string glob_skipped_warning(const GlobExpansion& expansion);

// Every function of the module `text` names that its glob matches. Errors:
// nothing matches (invalid_argument, as a missing name; the hint names up
// to three functions the glob matches ignoring case: "did you mean"), more
// than `limit` match (limit_exceeded, the hint naming `limit_option`). `what` starts errors.
Result<GlobExpansion> expand_function_glob(ProbeModules& modules, const std::string& text, const std::string& what,
                                           size_t limit, const std::string& limit_option);

}  // namespace xref
