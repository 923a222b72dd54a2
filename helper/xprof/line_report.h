// --by line: the samples' leaf addresses by source file and line, from the
// DWARF line table of the module's file (libdw, as addr2line). Samples whose
// module file is missing or another build, that have no line, or that were
// taken in kernel mode are counted apart by why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xprof/module_files.h"
#include "xprof/selection.h"
#include "xprof/unresolved.h"

namespace xref {

struct LineRow {
  std::string file;
  uint32_t line = 0;
  std::string function;  // the leaf's function
  std::string module;
  uint64_t samples = 0;
};

struct LineReport {
  std::vector<LineRow> lines;                   // most samples first
  std::vector<UnresolvedSamples> unresolved;    // by why
  uint64_t unresolved_samples = 0;
};

LineReport line_report(const Profile& profile, const ProfileSelection& selection, ModuleFiles& files);

}  // namespace xref
