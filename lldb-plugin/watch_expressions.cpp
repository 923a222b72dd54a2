#include "watch_expressions.h"

#include <string>

#include "hex.h"

namespace xref::lldb_plugin {
namespace {

constexpr uint64_t kPage = 4096;

// LLDB's error, on one line, without its own framing ("error: <user
// expression 3>:1:1: ", the source excerpt under it).
std::string one_line(const char* text) {
  std::string line = text != nullptr ? text : "LLDB could not evaluate it";
  if (const size_t end = line.find('\n'); end != std::string::npos) line.resize(end);
  if (line.rfind("error: ", 0) == 0) line.erase(0, 7);
  if (line.rfind("<user expression", 0) == 0) {
    // "<user expression 3>:1:1: use of ..." -> "use of ..."
    size_t at = line.find(">:");
    for (int colons = 0; at != std::string::npos && colons < 3; ++colons) at = line.find(':', at + 1);
    if (at != std::string::npos) line.erase(0, line.find_first_not_of(' ', at + 1));
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line.empty() ? "LLDB could not evaluate it" : line;
}

struct Evaluated {
  uint64_t address = 0;
  uint64_t size = 0;
  std::string type;
  std::string error;  // empty: evaluated
};

// Data only: the evaluator may interpret, never run code in the process
// (a watch is set on a process that must not be disturbed).
lldb::SBValue evaluate(lldb::SBTarget target, lldb::SBFrame frame, const std::string& expression) {
  lldb::SBExpressionOptions options;
  options.SetAllowJIT(false);
  options.SetIgnoreBreakpoints(true);
  options.SetUnwindOnError(true);
  options.SetFetchDynamicValue(lldb::eNoDynamicValues);
  options.SetSuppressPersistentResult(true);
  return frame.IsValid() ? frame.EvaluateExpression(expression.c_str(), options)
                         : target.EvaluateExpression(expression.c_str(), options);
}

// The page LLDB materializes a register's value in (it does so for a
// variable held in a register, whose "address" in an expression is then
// that copy's): an address on it is LLDB's, not the program's.
uint64_t scratch_page(lldb::SBTarget target, lldb::SBFrame frame) {
  lldb::SBValue copy = evaluate(target, frame, "&($pc)");
  if (copy.GetError().Fail()) return 0;
  return copy.GetValueAsUnsigned(0) & ~(kPage - 1);
}

// A variable (or a member, element or pointee of one) in a register has no
// address: LLDB names the register instead.
bool in_register(lldb::SBValue value) {
  const char* location = value.GetLocation();
  return location != nullptr && *location != '\0' && std::string(location).rfind("0x", 0) != 0;
}

Evaluated lvalue(lldb::SBTarget target, lldb::SBFrame frame, const std::string& expression) {
  Evaluated result;
  // A variable path first (no evaluator): it says where the value lives.
  // Not `&x`: LLDB gives that path x's address, as if it were an lvalue.
  if (frame.IsValid() && expression.find_first_not_of(' ') != std::string::npos &&
      expression[expression.find_first_not_of(' ')] != '&') {
    lldb::SBValue path = frame.GetValueForVariablePath(expression.c_str(), lldb::eNoDynamicValues);
    if (path.IsValid() && path.GetError().Success()) {
      if (in_register(path)) {
        // The helper's hint says what to give instead (an lvalue, or -l).
        result.error = std::string("it lives in register ") + path.GetLocation() +
                       " here (optimized code), not in memory: there is no address to watch";
        return result;
      }
      if (path.GetLoadAddress() != LLDB_INVALID_ADDRESS) {
        result.address = path.GetLoadAddress();
        result.size = path.GetByteSize();
        result.type = path.GetTypeName() != nullptr ? path.GetTypeName() : "";
        return result;
      }
    }
  }
  // Any other expression: the evaluator takes its address.
  lldb::SBValue address = evaluate(target, frame, "&(" + expression + ")");
  if (address.GetError().Fail()) {
    lldb::SBValue value = evaluate(target, frame, expression);
    result.error = value.GetError().Fail() ? one_line(value.GetError().GetCString())
                                           : "not an lvalue: use -l to watch the address it holds";
    return result;
  }
  lldb::SBType pointee = address.GetType().GetPointeeType();
  result.address = address.GetValueAsUnsigned(0);
  result.size = pointee.GetByteSize();
  result.type = pointee.GetName() != nullptr ? pointee.GetName() : "";
  if (const uint64_t scratch = scratch_page(target, frame); scratch != 0 && (result.address & ~(kPage - 1)) == scratch) {
    result.error = "LLDB holds its value in a register, not in the program's memory: there is no address to watch";
  }
  return result;
}

// -l: the value is the address (lldb's `watchpoint set expression`).
Evaluated location(lldb::SBTarget target, lldb::SBFrame frame, const std::string& expression) {
  Evaluated result;
  lldb::SBValue value = evaluate(target, frame, expression);
  if (value.GetError().Fail()) {
    result.error = one_line(value.GetError().GetCString());
    return result;
  }
  lldb::SBType type = value.GetType().GetCanonicalType();
  if (type.IsArrayType()) {  // an array stands for where it begins, as in C
    value = evaluate(target, frame, "&(" + expression + ")[0]");
    if (value.GetError().Fail()) {
      result.error = one_line(value.GetError().GetCString());
      return result;
    }
    type = value.GetType().GetCanonicalType();
  }
  lldb::SBError error;
  result.address = value.GetValueAsUnsigned(error, 0);
  if (type.IsPointerType()) {
    // Named as declared (uint8_t), sized as it is.
    lldb::SBType pointee = value.GetType().GetCanonicalType() == type ? value.GetType().GetPointeeType()
                                                                       : type.GetPointeeType();
    result.size = pointee.GetByteSize();
    result.type = pointee.GetName() != nullptr ? pointee.GetName() : "";
  } else if (!(type.GetTypeFlags() & (lldb::eTypeIsInteger | lldb::eTypeIsEnumeration)) || error.Fail()) {
    result.error = std::string("-l takes a pointer or an integer, and this is ") +
                   (value.GetTypeName() != nullptr ? value.GetTypeName() : "neither") +
                   ": drop -l to watch its own bytes";
  }
  return result;
}

}  // namespace

nlohmann::json evaluate_watch_expressions(lldb::SBTarget target, const nlohmann::json& items) {
  lldb::SBProcess process = target.GetProcess();
  lldb::SBFrame frame;
  if (process.IsValid() && process.GetState() == lldb::eStateStopped) frame = process.GetSelectedThread().GetSelectedFrame();
  nlohmann::json answers = nlohmann::json::array();
  for (const auto& item : items.is_array() ? items : nlohmann::json::array()) {
    if (!item.is_object()) continue;
    nlohmann::json answer = {{"index", item.value("index", nlohmann::json())}};
    const auto expression = item.find("expression");
    Evaluated evaluated;
    if (expression == item.end() || !expression->is_string() || expression->get<std::string>().empty()) {
      evaluated.error = "no expression to evaluate";
    } else if (!frame.IsValid() && process.IsValid() && process.GetState() == lldb::eStateRunning) {
      evaluated.error = "the process is running: stop it (process interrupt) so that LLDB can evaluate it";
    } else if (item.value("location", false)) {
      evaluated = location(target, frame, expression->get<std::string>());
    } else {
      evaluated = lvalue(target, frame, expression->get<std::string>());
    }
    if (evaluated.error.empty()) {
      answer["address"] = to_hex(evaluated.address);
      answer["size"] = evaluated.size;
      answer["type"] = evaluated.type;
      answer["error"] = nullptr;
    } else {
      answer["address"] = nullptr;
      answer["size"] = 0;
      answer["error"] = evaluated.error;
    }
    answers.push_back(std::move(answer));
  }
  return answers;
}

}  // namespace xref::lldb_plugin
