#include "render/stack_frames.h"

#include "hex.h"

namespace xref {

nlohmann::json stack_frame_json(Symbolizer& symbolizer, uint64_t live, bool pc) {
  nlohmann::json frame = {{"live", to_hex(live)}, {"kind", pc ? "pc" : "return"}};
  if (pc) {
    if (auto place = symbolizer.code_address(live)) {
      frame["static_va"] = to_hex(place->static_va);
      frame["function"] = place->name_with_offset();
      if (!place->module.empty()) frame["module"] = place->module;
    }
    return frame;
  }
  // A return address: named by the call before it, as callers are.
  const CallSiteInfo site = symbolizer.call_site(live);
  frame["call_site_va"] = site.known ? nlohmann::json(to_hex(site.call_site_va)) : nlohmann::json(nullptr);
  frame["call_site_verified"] = site.verified;
  if (site.call_site_live != 0) frame["call_site_live"] = to_hex(site.call_site_live);
  if (!site.caller.empty()) {
    frame["function"] = site.caller + (site.caller_va != 0 && site.known ? "+" + to_hex(site.call_site_va - site.caller_va)
                                                                        : std::string());
  }
  if (!site.module.empty()) frame["module"] = site.module;
  return frame;
}

nlohmann::json registers_json(std::span<const uint64_t> words) {
  static const char* kNames[] = {"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax",
                                 "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss"};
  nlohmann::json regs = nlohmann::json::object();
  for (size_t i = 0; i < words.size() && i < std::size(kNames); ++i) regs[kNames[i]] = to_hex(words[i]);
  return regs;
}

}  // namespace xref
