#include "command/option_values.h"

#include <algorithm>
#include <cctype>

#include "number_parse.h"

namespace xref {
namespace {

// The value as the message shows it: quoted, on one line, not too long.
std::string quoted(std::string_view text) {
  constexpr size_t kShown = 40;
  std::string shown;
  for (size_t i = 0; i < text.size() && i < kShown; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    shown += std::isprint(c) ? static_cast<char>(c) : '?';
  }
  if (text.size() > kShown) shown += "...";
  return "'" + shown + "'";
}

Error refused(std::string_view text, const std::string& why, const NumberRange& range) {
  const std::string hint = !range.hint.empty() ? range.hint
                                               : "give a whole number from " + std::to_string(range.min) + " to " +
                                                     std::to_string(range.max);
  return make_error(ErrorCode::invalid_argument, quoted(text) + " " + why, hint);
}

// Why parse_u64 refused `text`: a digit it could not add means more than 64
// bits; anything else is not a number.
std::string parse_failure(std::string_view text, const Error& error) {
  if (text.empty()) return "is not a valid non-negative number (empty)";
  const bool hex = text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const size_t at = error.column > 0 ? static_cast<size_t>(error.column - 1) : text.size();
  if (at >= text.size()) return "is not a valid non-negative number (no digits after 0x)";
  const unsigned char c = static_cast<unsigned char>(text[at]);
  if (hex ? std::isxdigit(c) : std::isdigit(c)) return "is out of range (more than 64 bits)";
  const std::string shown = std::isprint(c) ? std::string(1, static_cast<char>(c)) : "?";
  return "is not a valid non-negative number (unexpected '" + shown + "' at column " + std::to_string(error.column) +
         ")";
}

std::string error_text(const Error& error) { return error.message + "; " + error.hint; }

}  // namespace

Result<uint64_t> parse_number_in(std::string_view text, const NumberRange& range) {
  auto value = parse_u64(text, "value");
  if (!value) return refused(text, parse_failure(text, value.error()), range);
  if (*value < range.min || *value > range.max) return refused(text, "is out of range", range);
  return *value;
}

CLI::Validator number_in(NumberRange range) {
  const bool any = range.min == 0 && range.max == UINT64_MAX;
  const std::string description = any ? "" : "[" + std::to_string(range.min) + " - " + std::to_string(range.max) + "]";
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        auto value = parse_number_in(text, range);
        if (!value) return error_text(value.error());
        text = std::to_string(*value);
        return {};
      },
      description);
}

CLI::Validator not_empty(const std::string& what, const std::string& example) {
  return CLI::Validator(
      [what, example](std::string& text) -> std::string {
        if (!text.empty()) return {};
        return error_text(make_error(ErrorCode::invalid_argument, "an empty value is not " + what,
                                     "e.g. " + example + ", or leave the option out"));
      },
      "");
}

namespace {
// one_of's validator name: this prefix, then the values joined by commas.
constexpr std::string_view kChoicesName = "one of:";
}  // namespace

CLI::Validator one_of(std::vector<std::string> values) {
  std::string joined, listed;
  for (size_t i = 0; i < values.size(); ++i) {
    joined += (i == 0 ? "" : ",") + values[i];
    listed += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  }
  CLI::Validator validator(
      [values, listed](std::string& text) -> std::string {
        if (std::find(values.begin(), values.end(), text) != values.end()) return {};
        return error_text(make_error(ErrorCode::invalid_argument, xref::quoted(text) + " is not " + listed,
                                     "give " + (values.size() == 1 ? listed : "one of " + listed)));
      },
      "");
  validator.name(std::string(kChoicesName) + joined);
  return validator;
}

std::vector<std::string> option_choices(CLI::Option& option) {
  for (int index = 0;; ++index) {
    const CLI::Validator* validator = nullptr;
    try {
      validator = option.get_validator(index);
    } catch (const CLI::OptionNotFound&) {
      return {};
    }
    const std::string& name = validator->get_name();
    if (name.rfind(kChoicesName, 0) != 0) continue;
    std::vector<std::string> values;
    std::string rest = name.substr(kChoicesName.size());
    for (size_t start = 0; start <= rest.size();) {
      const size_t comma = std::min(rest.find(',', start), rest.size());
      values.push_back(rest.substr(start, comma - start));
      start = comma + 1;
    }
    return values;
  }
}

Error usage_error(const CLI::ParseError& failure, const std::string& hint) {
  std::string message = failure.what();
  // number_in and not_empty end their message with "; WHAT TO DO" (the
  // value they quote may hold "; " too, the hint never does).
  const size_t split = message.rfind("; ");
  if (dynamic_cast<const CLI::ValidationError*>(&failure) == nullptr || split == std::string::npos) {
    return make_error(ErrorCode::invalid_argument, message, hint);
  }
  return make_error(ErrorCode::invalid_argument, message.substr(0, split), message.substr(split + 2));
}

Result<uint64_t> parse_duration_ms(std::string_view text) {
  const size_t digits = std::min(text.find_first_not_of("0123456789"), text.size());
  const std::string_view number = text.substr(0, digits), unit = text.substr(digits);
  const std::string example = number.empty() || number.size() > 12 ? "5" : std::string(number);
  const std::string hint = "give a whole number and a unit: " + example + "s, " + example + "ms or " + example +
                           "m (or --duration-ms N, in milliseconds)";
  static const std::pair<std::string_view, uint64_t> kUnits[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
  const auto known = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return u.first == unit; });
  if (number.empty()) {
    return make_error(ErrorCode::invalid_argument, quoted(text) + " is not a duration", hint);
  }
  if (unit.empty()) return make_error(ErrorCode::invalid_argument, quoted(text) + " has no unit", hint);
  if (unit[0] == '.' || unit[0] == ',') {
    return make_error(ErrorCode::invalid_argument, quoted(text) + " is not a whole number of a unit",
                      "give a smaller unit: 1500ms for 1.5s");
  }
  if (known == std::end(kUnits)) {
    return make_error(ErrorCode::invalid_argument, quoted(text) + " has no unit xref knows (ms, s, m, h)", hint);
  }
  auto value = parse_number_in(number, {0, kMaxDurationMs / known->second});
  if (!value) {
    return make_error(ErrorCode::invalid_argument, quoted(text) + " is out of range",
                      "give from 0 (no limit) up to a year (8760h)");
  }
  return *value * known->second;
}

void add_duration_option(CLI::App& command, uint64_t& value, const std::string& description) {
  CLI::Option* in_ms =
      command.add_option("--duration-ms", value, description)
          ->capture_default_str()
          ->transform(number_in({0, kMaxDurationMs, "give milliseconds from 0 (no limit) to " +
                                                        std::to_string(kMaxDurationMs) + " (a year)"}));
  // The spelling `xref profile --duration 10s` has (and people type):
  // the same bound with a unit.
  command
      .add_option_function<uint64_t>(
          "--duration", [&value](const uint64_t& ms) { value = ms; },
          "the same as --duration-ms, with a unit: 500ms, 5s, 2m, 1h")
      ->type_name("TIME")
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            auto ms = parse_duration_ms(text);
            if (!ms) return error_text(ms.error());
            text = std::to_string(*ms);
            return {};
          },
          ""))
      ->excludes(in_ms);
}

void add_status_option(CLI::App& command, bool& no_status) {
  command.add_flag("--no-status,--quiet", no_status,
                   "no live status line (elapsed, counts, rate, lost) on stderr when it is a terminal");
}

Result<void> check_ringbuf_bytes(uint64_t bytes) {
  const std::string hint = "give a power of two from " + std::to_string(kMinRingbufBytes) + " to " +
                           std::to_string(kMaxRingbufBytes) + ", e.g. 1048576";
  if (bytes < kMinRingbufBytes || bytes > kMaxRingbufBytes) {
    return make_error(ErrorCode::invalid_argument, "--ringbuf-bytes " + std::to_string(bytes) + " is out of range",
                      hint);
  }
  if ((bytes & (bytes - 1)) != 0) {
    return make_error(ErrorCode::invalid_argument,
                      "--ringbuf-bytes " + std::to_string(bytes) + " is not a power of two", hint);
  }
  return {};
}

void add_ringbuf_option(CLI::App& command, uint64_t& value, const std::string& description) {
  command.add_option("--ringbuf-bytes", value, description)
      ->capture_default_str()
      ->transform(number_in({kMinRingbufBytes, kMaxRingbufBytes,
                             "give a power of two from " + std::to_string(kMinRingbufBytes) + " to " +
                                 std::to_string(kMaxRingbufBytes) + " (1 GiB)"}));
}

}  // namespace xref
