#include "trace_plan.h"

#include <algorithm>
#include <map>

#include "disassembly.h"
#include "filter_expr.h"
#include "hex.h"
#include "number_parse.h"

namespace xref {
namespace {

Error with_context(Error error, const std::string& context) {
  error.message = context + ": " + error.message;
  return error;
}

bool looks_like_number(const std::string& text) {
  return !text.empty() && (text[0] >= '0' && text[0] <= '9');
}

// The file byte already holds int3: a debugger breakpoint or a probe baked
// into the file. Placing a uprobe there would hide it or double-trap.
Result<void> check_probe_site(const ElfImage& image, const FunctionCode& code, uint64_t va, const std::string& what) {
  auto instruction = check_instruction_start(code, va);
  if (!instruction) return with_context(instruction.error(), what);
  auto bytes = image.bytes_at(va, 1);
  if (!bytes) {
    return make_error(ErrorCode::address_unmapped, what + ": " + to_hex(va) + " is not file-backed code");
  }
  if ((*bytes)[0] == 0xcc) {
    return make_error(ErrorCode::invalid_argument, what + ": the byte at " + to_hex(va) + " is already int3",
                      "pick another address; xref will not stack a uprobe on a breakpoint instruction");
  }
  return {};
}

class Planner {
 public:
  Planner(const Target& target, const TraceRequest& request) : target_(target), request_(request) {}

  Result<TracePlan> run() {
    plan_.module = target_.space.main_module();
    if (plan_.module == nullptr) {
      return make_error(ErrorCode::internal, "the process's executable is not among its mappings");
    }
    auto image = target_.space.image(*plan_.module);
    if (!image) return image.error();
    plan_.image = *image;

    if (request_.start.empty()) {
      return make_error(ErrorCode::invalid_argument, "--start is required", "name the function that opens a window");
    }
    if (request_.uretprobes) {
      plan_.return_mode = "mixed_uretprobe_best_effort";
      plan_.warnings.push_back("uretprobe_returns_are_best_effort_under_unwind");
    }
    auto start = resolve_function(*plan_.image, request_.start, "--start");
    if (!start) return start.error();
    plan_.start_va = start->start;
    auto start_fetches = parse_fetch_spec(request_.fetch);
    if (!request_.fetch.empty() && !start_fetches) return with_context(start_fetches.error(), "--fetch");
    if (start_fetches) plan_.start_fetches = *start_fetches;
    if (!request_.start_filter.empty()) {
      const auto variables = filter_variables(plan_.start_fetches);
      auto filter = parse_filter(request_.start_filter, variables);
      if (!filter) return with_context(filter.error(), "--start-filter");
      auto lowered = lower_filter(*filter);
      if (!lowered) return with_context(lowered.error(), "--start-filter");
      plan_.start_filter = *lowered;
    }

    auto stop_return = request_.stop_return.empty() ? start
                                                    : resolve_function(*plan_.image, request_.stop_return, "--stop-return");
    if (!stop_return) return stop_return.error();
    plan_.stop_return_va = stop_return->start;

    if (auto added = add_function(*start); !added) return added.error();
    if (auto added = add_function(*stop_return); !added) return added.error();
    for (const std::string& list : request_.functions) {
      for (const std::string& name : split(list)) {
        auto function = resolve_function(*plan_.image, name, "--functions");
        if (!function) return function.error();
        if (auto added = add_function(*function); !added) return added.error();
      }
    }
    if (auto fetches = apply_fetch_options(); !fetches) return fetches.error();
    functions_by_start_[plan_.stop_return_va]->stop_return = true;
    if (auto probes = build_probes(); !probes) return probes.error();
    if (!request_.stop.empty()) {
      if (auto stop = add_stop_probe(); !stop) return stop.error();
    }
    if (plan_.probes.size() > XREF_TRACE_MAX_PROBES) {
      return make_error(ErrorCode::invalid_argument,
                        std::to_string(plan_.probes.size()) + " probes needed; the limit is " +
                            std::to_string(XREF_TRACE_MAX_PROBES),
                        "trace fewer functions");
    }
    return std::move(plan_);
  }

 private:
  static std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      std::string part = list.substr(start, comma - start);
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      if (!part.empty()) parts.push_back(part);
      start = comma + 1;
    }
    return parts;
  }

  Result<void> add_function(const FunctionSymbol& symbol) {
    if (functions_by_start_.count(symbol.start)) return {};
    if (symbol.source == SymbolSource::plt) {
      return make_error(ErrorCode::invalid_argument, symbol.name + " is a PLT stub",
                        "trace the library function itself (module:symbol arrives with shared-library support)");
    }
    TracedFunction function;
    function.id = static_cast<uint32_t>(plan_.functions.size());
    function.symbol = symbol;
    plan_.functions.push_back(function);
    functions_by_start_[symbol.start] = nullptr;  // pointers fixed in build_probes
    return {};
  }

  void index_functions() {
    for (auto& function : plan_.functions) functions_by_start_[function.symbol.start] = &function;
  }

  Result<void> apply_fetch_options() {
    index_functions();
    auto apply = [&](const std::vector<std::pair<std::string, std::string>>& options, const char* flag,
                     bool at_return) -> Result<void> {
      for (const auto& [where, spec] : options) {
        auto function = resolve_function(*plan_.image, where, flag);
        if (!function) return function.error();
        if (!functions_by_start_.count(function->start)) {
          if (auto added = add_function(*function); !added) return added.error();
          index_functions();
        }
        auto items = parse_fetch_spec(spec);
        if (!items) return with_context(items.error(), std::string(flag) + " " + where);
        TracedFunction* traced = functions_by_start_[function->start];
        (at_return ? traced->return_fetches : traced->entry_fetches) = *items;
      }
      return {};
    };
    if (auto done = apply(request_.fetch_at, "--fetch-at", false); !done) return done;
    return apply(request_.fetch_ret, "--fetch-ret", true);
  }

  Result<void> build_probes() {
    index_functions();
    for (TracedFunction& function : plan_.functions) {
      auto code = disassemble(*plan_.image, function.symbol);
      if (!code) return with_context(code.error(), "disassembling " + function.symbol.demangled);
      if (!code->complete()) {
        return make_error(ErrorCode::not_an_instruction,
                          function.symbol.demangled + " did not disassemble cleanly (undecodable bytes or branches "
                                                      "into instructions)",
                          "xref will not guess instruction boundaries for return probes; trace another function");
      }
      const bool is_start = function.symbol.start == plan_.start_va;
      const uint8_t flags = function.stop_return ? XREF_PROBE_F_STOP_RETURN : 0;
      std::vector<FetchItem> entry_fetches = function.entry_fetches;
      if (is_start && entry_fetches.empty()) entry_fetches = plan_.start_fetches;
      if (is_start && !function.entry_fetches.empty() && !plan_.start_fetches.empty()) {
        return make_error(ErrorCode::invalid_argument, "both --fetch and --fetch-at name the start function",
                          "use one of them for the start probe");
      }
      if (is_start) plan_.start_fetches = entry_fetches;
      if (auto probe = add_probe(*code, function, function.symbol.start, XREF_PROBE_ENTRY, flags, is_start,
                                 entry_fetches);
          !probe) {
        return probe;
      }
      if (code->entry_nop_va && *code->entry_nop_va == function.symbol.start) {
        plan_.entry_nop_probes.push_back(function.symbol.start);
      }
      if (request_.uretprobes) {
        // One return probe at the entry; the kernel swaps the return address.
        if (auto probe = add_probe(*code, function, function.symbol.start, XREF_PROBE_URETPROBE, flags, false,
                                   function.return_fetches);
            !probe) {
          return probe;
        }
        continue;
      }
      for (uint64_t ret : code->rets) {
        if (auto probe = add_probe(*code, function, ret, XREF_PROBE_RET, flags, false, function.return_fetches);
            !probe) {
          return probe;
        }
      }
      for (const ExitJump& exit : code->exits) {
        if (exit.kind == ExitKind::cold_part) continue;
        if (exit.kind == ExitKind::indirect || exit.kind == ExitKind::outside_jump) {
          plan_.warnings.push_back(function.symbol.demangled + " may leave through " + exit_kind_name(exit.kind) +
                                   " jump at " + to_hex(exit.va) + "; such exits are seen at the next event");
          continue;
        }
        if (auto probe = add_probe(*code, function, exit.va, XREF_PROBE_TAIL_EXIT, flags, false, {}); !probe) {
          return probe;
        }
      }
      if (code->rets.empty() && code->exits.empty()) {
        plan_.warnings.push_back(function.symbol.demangled + " has no ret instruction: its returns cannot be seen");
      }
    }
    return {};
  }

  Result<void> add_stop_probe() {
    auto va = parse_u64(request_.stop, "--stop");
    uint64_t stop_va = 0;
    if (va) {
      stop_va = *va;
    } else {
      auto function = resolve_function(*plan_.image, request_.stop, "--stop");
      if (!function) return function.error();
      stop_va = function->start;
    }
    const FunctionSymbol* owner = plan_.image->function_containing(stop_va);
    if (owner == nullptr) {
      return make_error(ErrorCode::address_unmapped, "--stop " + to_hex(stop_va) + " is in no known function");
    }
    auto code = disassemble(*plan_.image, *owner);
    if (!code) return code.error();
    plan_.stop_va = stop_va;
    TracedFunction none;
    none.id = 0xffffffff;
    return add_probe(*code, none, stop_va, XREF_PROBE_STOP, 0, false, {});
  }

  Result<void> add_probe(const FunctionCode& code, const TracedFunction& function, uint64_t va, uint8_t kind,
                         uint8_t flags, bool start, const std::vector<FetchItem>& fetches) {
    const std::string what = std::string(kind == XREF_PROBE_STOP ? "--stop" : "probe") + " at " + to_hex(va);
    if (auto site = check_probe_site(*plan_.image, code, va, what); !site) return site;
    for (const PlannedProbe& existing : plan_.probes) {
      // An entry and a uretprobe share the function's first byte by design.
      if (existing.static_va == va && kind != XREF_PROBE_URETPROBE) {
        return make_error(ErrorCode::invalid_argument, what + " is already probed as another event",
                          "pick a --stop address that is not a traced function's entry, ret or tail jump");
      }
    }
    auto offset = plan_.image->file_offset_of(va);
    if (!offset) return offset.error();
    PlannedProbe probe;
    probe.static_va = va;
    probe.file_offset = *offset;
    probe.function_id = function.id;
    probe.kind = kind;
    probe.flags = flags;
    probe.start = start;
    probe.fetches = fetches;
    plan_.probes.push_back(std::move(probe));
    return {};
  }

  const Target& target_;
  const TraceRequest& request_;
  TracePlan plan_;
  std::map<uint64_t, TracedFunction*> functions_by_start_;
};

}  // namespace

Result<FunctionSymbol> resolve_function(const ElfImage& image, const std::string& text, const std::string& what) {
  if (looks_like_number(text)) {
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
    return make_error(ErrorCode::address_unmapped, what + " " + to_hex(*va) + " is not a known function start in " +
                                                       image.path(),
                      "addresses are static VAs as nm/objdump print them; check with `xref resolve`");
  }
  const auto found = image.find_functions(text);
  if (found.empty()) {
    return make_error(ErrorCode::invalid_argument, what + ": no function named '" + text + "'",
                      "use the name nm -C prints, or a static VA");
  }
  if (found.size() > 1) {
    std::string list;
    for (const FunctionSymbol* function : found) list += " " + to_hex(function->start);
    return make_error(ErrorCode::invalid_argument, what + ": '" + text + "' names several functions:" + list,
                      "give the static VA of the one you mean");
  }
  return *found.front();
}

Result<TracePlan> plan_trace(const Target& target, const TraceRequest& request) {
  return Planner(target, request).run();
}

}  // namespace xref
