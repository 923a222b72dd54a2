// What the user asked `xref watch` for, as typed (addresses not yet
// resolved). Filled by the CLI11 definitions in options.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sites/debugger_context.h"

namespace xref {

struct WatchRequest {
  std::vector<std::string> addresses;  // 0xVA, sym, module:sym, sym+0x10, each with an optional :LEN
  std::vector<std::string> follows;    // --follow 'SLOT->+OFF:LEN' (docs/watch.md)
  // In a debugger, what each range is called: the expression it was
  // evaluated from (watch/debugger_expressions.h rewrote addresses[i] /
  // follows[i] to the live address); "" or missing: as typed.
  std::vector<std::string> address_labels;
  std::vector<std::string> follow_labels;
  uint64_t size = 0;                   // -s/--size: in a debugger, the length of each expression's range (0: its type's)
  bool location = false;               // -l/--location: in a debugger, an expression's value is the address to watch
  uint64_t length = 0;                 // --len: the default length of an ADDR without :LEN (0: the symbol's size, else 8)
  std::string access = "write";        // write, rw (hw only)
  std::string backend = "auto";        // auto, hw, stores
  std::vector<std::string> in;         // --in MODULE|FN...: where the stores engine looks for stores
  bool changed = false;                // only writes that change the bytes are recorded
  std::string fetch;                   // a fetch spec, read at each write (stores) or trap (hw)
  std::string filter;                  // over value, old and the fetched names
  uint64_t every = 1;
  uint64_t first = 0;                  // per watch: the first N passing writes are recorded (0: no limit)
  uint64_t until_hits = 0;             // stop after N passing writes in all (0: no bound)
  bool regs = false;
  bool callers = false;                // the frame-pointer user stack of each write, deduplicated and counted
  uint64_t duration_ms = 1000;         // 0: until a bound or Ctrl-C
  uint64_t max_events = 4096;          // records kept in all (0: no bound)
  std::string stop_when;               // in a debugger: the write that makes this true stops its thread
  uint64_t stop_skip = 0;
  uint64_t heartbeat_ms = 0;
  std::string mark_file;
  std::string mark_regex;
  uint32_t debugger_hw_slots = 0;      // in a debugger: debug registers the debugger itself uses
  DebuggerContext debugger;
};

}  // namespace xref
