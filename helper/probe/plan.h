// From a ProbeRequest to the sites the probe program is attached to: one
// site per address the user named (checked to be an instruction start, not
// an int3, in code; addresses typed twice, or spelled two ways for the same
// probe site, are one site), with how its return address is read (--callers: at a
// function's first instruction [rsp] exactly, inside it the .eh_frame CFA
// rule's slot), plus, for --group-by ret, a site at each ret of the
// address's function. The fetches and the filter are compiled once for
// all addresses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fetch_spec.h"
#include "filter_program.h"
#include "probe/request.h"
#include "probe_abi.h"
#include "process/target.h"
#include "result.h"
#include "sites/probe_modules.h"

namespace xref {

// An address the user named, resolved.
struct ProbeAddress {
  std::string given;            // as typed ("bp:3.2" for a location of bp:3)
  uint32_t module_index = 0;    // into ProbePlan::modules
  uint64_t static_va = 0;       // the address itself
  FunctionSymbol function;      // the function holding it
  std::string implementation;   // a GNU IFUNC: the implementation bound (`function` keeps the name given)
  bool at_entry = false;        // the function's first instruction
  std::string caller_method;    // --callers: "exact" ([rsp] at entry), "inferred" (CFA rule), "" none
  std::string caller_note;      // why callers are not read, when they are not
  // Every spelling typed for this probe site, `given` first, with how many
  // times each was typed: duplicates are merged into one site.
  std::vector<std::pair<std::string, uint64_t>> spellings;
};

// One attached address: the user's address itself (its site), or a ret of
// its function (--group-by ret).
struct ProbeSite {
  uint32_t address = 0;         // into ProbePlan::addresses
  uint32_t module_index = 0;
  uint64_t static_va = 0;       // where the uprobe goes
  uint64_t file_offset = 0;
  bool ret = false;
  xref_probe_site compiled{};   // what the BPF program reads (cookie = the site's index)
};

// A glob the user typed and how many functions it matched.
struct ProbeGlob {
  std::string pattern;
  size_t matched = 0;
};

struct ProbePlan {
  ProbeModules modules;
  std::vector<ProbeAddress> addresses;
  std::vector<ProbeSite> sites;           // [i] has cookie i
  std::vector<FetchItem> fetches;
  std::optional<FilterProgram> filter;
  std::optional<FilterProgram> stop_filter;  // --stop-when
  std::string group_by;                   // as asked
  uint16_t group_string_bound = 0;        // --group-by a :string fetch: its bound (0: not a string)
  std::string hist;
  uint64_t stacks = 0;                    // --stacks: frames per stack (0: none)
  std::vector<std::string> warnings;
  std::vector<uint32_t> breakpoints_to_disable;  // bp:N addresses: the debugger disables N while probing
  std::vector<ProbeGlob> globs;           // each glob typed, with its count
};

Result<ProbePlan> plan_probe(const Target& target, const ProbeRequest& request);

}  // namespace xref
