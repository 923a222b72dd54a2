#include "trace/planning/here_cfa.h"

#include "cfa_rule.h"
#include "hex.h"

namespace xref {

Result<HereCfa> choose_here_cfa(const HereFrame& frame, std::optional<uint64_t> rule_cfa,
                                std::optional<StackRange> stack, const std::string& rule_text) {
  HereCfa chosen{frame.cfa, ""};
  if (rule_cfa && *rule_cfa != frame.cfa) {
    chosen.cfa = *rule_cfa;
    chosen.warning = "the debugger's CFA " + to_hex(frame.cfa) + " disagrees with the .eh_frame rule at the pc (" +
                     rule_text + " = " + to_hex(*rule_cfa) + "); using the unwind rule";
  }
  // The return address sits just below the CFA, above sp, on sp's stack.
  if (frame.sp && stack) {
    const bool on_stack = chosen.cfa > *frame.sp && chosen.cfa - 8 >= stack->start && chosen.cfa <= stack->end;
    if (!on_stack) {
      return make_error(ErrorCode::invalid_argument,
                        "--here: the frame's CFA " + to_hex(chosen.cfa) + " is not above its sp " + to_hex(*frame.sp) +
                            " on the thread's stack [" + to_hex(stack->start) + ", " + to_hex(stack->end) + ")",
                        "the debugger cannot unwind this frame; step past the function's first instructions "
                        "or use --start");
    }
  }
  return chosen;
}

Result<HereCfa> here_cfa(const Target& target, const HereFrame& frame, const CodeSite& site) {
  std::optional<uint64_t> rule_cfa;
  std::string rule_text;
  if (frame.sp && site.image) {
    if (auto rule = cfa_rule_at(*site.image, site.static_va)) {
      rule_text = to_string(*rule);
      if (rule->reg == CfaRule::Register::rsp) {
        rule_cfa = *frame.sp + static_cast<uint64_t>(rule->offset);
      } else if (rule->reg == CfaRule::Register::rbp && frame.bp) {
        rule_cfa = *frame.bp + static_cast<uint64_t>(rule->offset);
      }
    }
  }
  std::optional<StackRange> stack;
  if (frame.sp) {
    for (const MapEntry& mapping : target.space.maps()) {
      if (*frame.sp >= mapping.start && *frame.sp < mapping.end) {
        stack = StackRange{mapping.start, mapping.end};
        break;
      }
    }
  }
  return choose_here_cfa(frame, rule_cfa, stack, rule_text);
}

}  // namespace xref
