// Probe tests compare xref's counts with the ground truth trace_target
// records itself: per function, its calls by thread, by caller, by first
// argument and by return value.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "objdump_listing.h"
#include "trace_harness.h"

namespace xref::test {

inline constexpr int kRequests = 40;  // per thread; the target exits after them
inline constexpr int kProcessExited = 4;  // docs/cli.md: the target exited during the run

// Who called each entry of `function`: the function of the frame open
// below it in the record (a tail exit hands its frame to the next entry).
struct RecordedCalls {
  std::map<uint32_t, uint64_t> by_tid;
  std::map<std::string, uint64_t> by_caller;
  std::map<uint64_t, uint64_t> by_first_arg;
  std::map<uint64_t, uint64_t> by_return;
  // The recorded (traced) functions active at each call, innermost first:
  // {"settle", "settle", "handle_request"}.
  std::map<std::vector<std::string>, uint64_t> by_stack;
  uint64_t total = 0;
};

inline RecordedCalls recorded_calls(const std::map<RequestKey, std::vector<RecordedEvent>>& record,
                                    const std::string& function) {
  RecordedCalls calls;
  for (const auto& [key, events] : record) {
    std::vector<std::string> frames;
    for (const RecordedEvent& event : events) {
      if (event.kind == '>') {
        if (event.function == function) {
          ++calls.total;
          ++calls.by_tid[key.first];
          ++calls.by_caller[frames.empty() ? "?" : frames.back()];
          if (!event.values.empty()) ++calls.by_first_arg[event.values[0]];
          std::vector<std::string> stack = {function};
          stack.insert(stack.end(), frames.rbegin(), frames.rend());
          ++calls.by_stack[stack];
        }
        frames.push_back(event.function);
      } else if (!frames.empty()) {
        if (event.kind == '<' && event.function == function && !event.values.empty()) ++calls.by_return[event.values[0]];
        frames.pop_back();
      }
    }
  }
  return calls;
}

// Each target of a test has its own record (and go file).
inline std::string next_record_name() {
  static int made = 0;
  return "probe-" + std::to_string(made++);
}

// trace_target with two workers of kRequests requests each, which start
// once xref is attached and after which the target exits.
struct ProbedTarget {
  RecordFile record_file{next_record_name()};
  TargetProcess target{target_command(record_file.path, {"--threads", "2", "--requests", std::to_string(kRequests),
                                                         "--interval-us", "200"})};
  XrefRun probe(std::vector<std::string> args) {
    std::vector<std::string> all = {"probe", "--pid", std::to_string(target.pid()), "--json", "--duration-ms", "0"};
    all.insert(all.end(), args.begin(), args.end());
    return run_xref_attached(all, record_file.go_file());
  }
  std::map<RequestKey, std::vector<RecordedEvent>> record() const { return read_record(record_file.path); }
};

inline const nlohmann::json& address_of(const nlohmann::json& document, const std::string& given) {
  for (const auto& address : document["addresses"]) {
    if (address["address"] == given) return address;
  }
  static const nlohmann::json kNone;
  ADD_FAILURE() << "no address " << given << " in " << document.dump();
  return kNone;
}

// An address's threads[] as tid -> passing hits.
inline std::map<uint32_t, uint64_t> thread_counts(const nlohmann::json& address) {
  std::map<uint32_t, uint64_t> threads;
  for (const auto& thread : address["threads"]) threads[thread["tid"].get<uint32_t>()] = thread["hits"].get<uint64_t>();
  return threads;
}

// An address's callers as the calling function's plain name -> hits.
inline std::map<std::string, uint64_t> caller_counts(const nlohmann::json& address) {
  std::map<std::string, uint64_t> callers;
  for (const auto& caller : address["callers"]["sites"]) {
    EXPECT_EQ(caller["call_site_verified"], true) << caller.dump();
    callers[plain_name(caller.value("caller", std::string("?")))] += caller["hits"].get<uint64_t>();
  }
  return callers;
}

// An address's groups as key -> hits.
inline std::map<uint64_t, uint64_t> group_counts(const nlohmann::json& address) {
  std::map<uint64_t, uint64_t> groups;
  for (const auto& value : address["groups"]["values"]) {
    groups[std::stoull(value["key"].get<std::string>(), nullptr, 16)] = value["hits"].get<uint64_t>();
  }
  return groups;
}

// A run of ProbedTarget that probed the entries of `functions` with
// --callers until the target exited: complete, and every count equals the
// record's calls (hits, passed, threads, callers).
inline void expect_entry_counts_equal_record(const nlohmann::json& document,
                                             const std::map<RequestKey, std::vector<RecordedEvent>>& record,
                                             const std::vector<std::string>& functions) {
  EXPECT_EQ(document["summary"]["stop_reason"], "target_exited");
  EXPECT_EQ(document["summary"]["complete"], true);
  EXPECT_EQ(document["summary"]["lost_events"], 0);
  ASSERT_EQ(record.size(), 2u * kRequests) << "every request of both threads is in the record";
  for (const std::string& function : functions) {
    SCOPED_TRACE(function);
    const RecordedCalls expected = recorded_calls(record, function);
    const auto& address = address_of(document, "svc::" + function);
    EXPECT_EQ(address["hits"].get<uint64_t>(), expected.total);
    EXPECT_EQ(address["passed"].get<uint64_t>(), expected.total);
    EXPECT_EQ(address["at_entry"], true);
    EXPECT_EQ(thread_counts(address), expected.by_tid);
    EXPECT_EQ(address["callers"]["method"], "exact");
    EXPECT_EQ(address["callers"]["evidence"], "observed");
    EXPECT_EQ(address["callers"]["complete"], true);
    EXPECT_EQ(caller_counts(address), expected.by_caller);
  }
}

// svc::settle probed with --fetch d=%di:u64 --filter 'd >= 1' --group-by d:
// every recorded call hit, those with d >= 1 passed, grouped by d.
inline void expect_filtered_groups_equal_record(const nlohmann::json& document,
                                                const std::map<RequestKey, std::vector<RecordedEvent>>& record) {
  const RecordedCalls expected = recorded_calls(record, "settle");
  const auto& address = address_of(document, "svc::settle");
  EXPECT_EQ(address["hits"].get<uint64_t>(), expected.total);
  uint64_t passing = 0;
  std::map<uint64_t, uint64_t> expected_groups;
  for (const auto& [d, count] : expected.by_first_arg) {
    if (d < 1) continue;
    passing += count;
    expected_groups[d] = count;
  }
  EXPECT_GT(passing, 0u);
  EXPECT_LT(passing, expected.total) << "settle(0) ends every recursion";
  EXPECT_EQ(address["passed"].get<uint64_t>(), passing);
  EXPECT_EQ(group_counts(address), expected_groups);
  EXPECT_EQ(address["groups"]["complete"], true);
}

// svc::settle probed with --group-by ret: its return values by count, at
// each of its rets as objdump lists them (settle has no split-off part).
inline void expect_ret_groups_equal_record(const nlohmann::json& document,
                                           const std::map<RequestKey, std::vector<RecordedEvent>>& record) {
  const auto& address = address_of(document, "svc::settle");
  const std::string objdump_rets = command_output("objdump -d --no-show-raw-insn " + std::string(XREF_TRACE_TARGET) +
                                                  " | awk '/<_ZN3svc6settleEm>:/,/^$/' | grep -cw ret");
  EXPECT_EQ(address["groups"]["ret_sites"].get<uint64_t>(), std::stoull(objdump_rets));
  EXPECT_EQ(group_counts(address), recorded_calls(record, "settle").by_return);
}

// `va` inside svc::settle probed with --callers: the callers, read at the
// CFA rule's slot, are inferred and still exactly the record's.
inline void expect_inferred_callers_equal_record(const nlohmann::json& document, const std::string& va,
                                                 const std::map<RequestKey, std::vector<RecordedEvent>>& record) {
  const auto& address = address_of(document, va);
  EXPECT_EQ(address["at_entry"], false);
  EXPECT_EQ(address["callers"]["method"], "inferred");
  EXPECT_EQ(address["callers"]["evidence"], "inferred");
  const RecordedCalls expected = recorded_calls(record, "settle");
  EXPECT_EQ(address["hits"].get<uint64_t>(), expected.total);
  EXPECT_EQ(caller_counts(address), expected.by_caller);
}

// An instruction inside svc::settle, as objdump lists it: the first test
// instruction, past the prologue and before any call returns ("0x..."; ""
// and a failure when there is none).
inline std::string va_inside_settle() {
  const ObjdumpListing listing(XREF_TRACE_TARGET);
  const auto settle = listing.symbol("_ZN3svc6settleEm");
  if (!settle) {
    ADD_FAILURE() << "objdump shows no svc::settle";
    return "";
  }
  for (const auto& instruction : listing.in_range(*settle, *settle + 0x60)) {
    if (instruction.mnemonic == "test") return hex_string(instruction.address);
  }
  ADD_FAILURE() << "objdump shows no test instruction in svc::settle";
  return "";
}

}  // namespace xref::test
