// Option values checked where CLI11 reads them, the same way for every
// command (and for `xref serve`, which parses a front end's words with the
// same definitions). CLI11 2.1 reads numbers with strtoull/strtoll: "-1" into
// an unsigned option is 18446744073709551615, a number past 64 bits
// saturates, and "010" is octal. Every number option goes through
// number_in() instead.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "result.h"

namespace xref {

// A ring buffer size BPF and tracefs take: a power of two from
// kMinRingbufBytes to kMaxRingbufBytes (invalid_argument naming it else).
Result<void> check_ringbuf_bytes(uint64_t bytes);

// --duration-ms and --ringbuf-bytes as every live command defines them,
// bound to `value`, with the bounds below and the default shown; beside
// --duration-ms, --duration with a unit (5s, 500ms, 2m, 1h).
void add_duration_option(CLI::App& command, uint64_t& value, const std::string& description);
void add_ringbuf_option(CLI::App& command, uint64_t& value, const std::string& description);

// --no-status (or --quiet): no live status line on a terminal
// (output/status_line.h).
void add_status_option(CLI::App& command, bool& no_status);

// The largest PID Linux hands out (PID_MAX_LIMIT - 1 on 64-bit).
constexpr uint64_t kMaxPid = 4194303;
// Bounds every live command shares: --duration-ms (a year), --ringbuf-bytes.
constexpr uint64_t kMaxDurationMs = 365ull * 24 * 60 * 60 * 1000;
constexpr uint64_t kMinRingbufBytes = 4096;
constexpr uint64_t kMaxRingbufBytes = 1ull << 30;

// What an option's number may be; `hint` replaces the default "give a
// whole number from MIN to MAX" (it should name the range too).
struct NumberRange {
  NumberRange() = default;
  NumberRange(uint64_t min_value, uint64_t max_value, std::string hint_text = {})
      : min(min_value), max(max_value), hint(std::move(hint_text)) {}

  uint64_t min = 0;
  uint64_t max = UINT64_MAX;
  std::string hint;
};

// Reads a whole number, decimal or 0x hex, without sign or spaces, within
// `range`. The error (invalid_argument) quotes the value and says why it is
// refused, with the column of a bad character; its hint gives the range.
Result<uint64_t> parse_number_in(std::string_view text, const NumberRange& range);

// --duration's value: a whole number and a unit, ms, s, m or h, up to a
// year; in milliseconds. A number without a unit is refused: seconds or
// milliseconds? (the hint names both spellings).
Result<uint64_t> parse_duration_ms(std::string_view text);

// A window_id (trace show, trace diff).
inline const NumberRange kWindowIds{0, UINT64_MAX, "give a window_id of the trace, a whole number"};

// parse_number_in as a CLI11 transform: the value is handed on in decimal,
// which the option's type holds as long as `range` fits in it. CLI11 puts
// the option's name before the message ("--max-windows: '-1' is ...").
CLI::Validator number_in(NumberRange range);

// Refuses an empty value (--fetch ''); `what` names the value ("a fetch
// spec"), `example` shows one.
CLI::Validator not_empty(const std::string& what, const std::string& example);

// A value from a fixed set (--backend, --format): any other is refused,
// naming the set. The set stays in the option's definition, where the man
// pages and Tab completion read it back (option_choices).
CLI::Validator one_of(std::vector<std::string> values);
// What puts the probes in, for trace and probe (docs/cli.md, "The trace backend").
inline const std::vector<std::string> kBackends = {"auto", "uprobe_multi", "perf_uprobe", "tracefs"};
std::vector<std::string> option_choices(CLI::Option& option);

// The error a CLI11 parse failure reports, under --json as in text: the
// message of number_in or not_empty keeps its own WHAT TO DO; CLI11's own
// messages get `hint`.
Error usage_error(const CLI::ParseError& failure, const std::string& hint);

}  // namespace xref
