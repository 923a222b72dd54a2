// AddressSymbols over LLDB's own view of the target: live addresses through
// the load addresses LLDB knows, names and lines from its symbols and debug
// info, static VAs through the module's file addresses.
#pragma once

#include <lldb/API/LLDB.h>

#include <map>
#include <string>
#include <vector>

#include "window_render.h"

namespace xref::lldb_plugin {

class LldbSymbols : public AddressSymbols {
 public:
  explicit LldbSymbols(lldb::SBTarget target);

  std::optional<uint64_t> live(const EventAddress& address) override;
  CodePlace describe(const EventAddress& address) override;
  std::vector<uint32_t> breakpoints_at(uint64_t live_address) override;

  // The SBAddress of an event address: its live address when LLDB can
  // resolve it, else its static VA in its module (after the process exited,
  // load addresses no longer resolve).
  lldb::SBAddress resolve(const EventAddress& address);

 private:
  lldb::SBModule module_named(const std::string& name);

  lldb::SBTarget target_;
  std::multimap<uint64_t, uint32_t> breakpoint_locations_;  // live address -> breakpoint id
};

// "handle_request+0x1c sample_service.c:172" for an address LLDB resolved.
std::string describe_address(lldb::SBTarget target, lldb::SBAddress address);

}  // namespace xref::lldb_plugin
