// The window format on a real plan: trace_target, opened and planned as
// `xref trace --start svc::handle_request --functions svc::validate` would,
// with windows made of the records its probes would send. Checked: the
// JSON is what json_text() writes for the same value (keys sorted, compact),
// the text (render/window_text.h, named by the helper's own symbols of the
// live process) says what the records say, and the fields name it.
#include "trace/window_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "command_output.h"
#include "hex.h"
#include "output/json_envelope.h"
#include "target_process.h"
#include "trace/session.h"
#include "render/helper_names.h"
#include "render/window_text.h"
#include "trace/saved/file.h"
#include "trace/saved/show.h"

namespace xref {
namespace {

class WindowFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    process_ = std::make_unique<test::TargetProcess>(
        std::vector<std::string>{XREF_TRACE_TARGET, "--threads", "1", "--interval-us", "100000"});
    auto target = open_target({process_->pid(), ""});
    ASSERT_TRUE(target) << target.error().message;
    target_ = std::make_unique<Target>(std::move(*target));
    TraceRequest request;
    request.start = "svc::handle_request";
    request.fetch = "req=%di:u64";
    request.functions = {"svc::validate"};
    request.fetch_at = {{"svc::validate", "id=%di:s32"}};
    auto plan = plan_trace(*target_, request);
    ASSERT_TRUE(plan) << plan.error().message;
    plan_ = std::make_unique<TracePlan>(std::move(*plan));
  }

  uint32_t function_id(const std::string& prefix) const {
    for (const TracedFunction& function : plan_->functions) {
      if (function.symbol.demangled.rfind(prefix, 0) == 0) return function.id;
    }
    ADD_FAILURE() << "no traced function " << prefix;
    return 0;
  }

  uint32_t probe_index(uint32_t function, uint8_t kind) const {
    for (uint32_t i = 0; i < plan_->probes.size(); ++i) {
      if (plan_->probes[i].function_id == function && plan_->probes[i].kind == kind) return i;
    }
    ADD_FAILURE() << "no probe of kind " << int(kind) << " for function " << function;
    return 0;
  }

  xref_trace_event record(uint64_t seq, uint8_t type, uint32_t depth, uint32_t function, uint32_t probe) const {
    xref_trace_event event;
    std::memset(&event, 0, sizeof event);
    event.window_id = 1;
    event.seq = seq;
    event.type = type;
    event.depth = static_cast<uint16_t>(depth);
    event.tid = 4242;
    event.function_id = function;
    event.probe_index = probe;
    event.timestamp_ns = 1000 + seq * 10;
    return event;
  }

  std::unique_ptr<test::TargetProcess> process_;
  std::unique_ptr<Target> target_;
  std::unique_ptr<TracePlan> plan_;
};

std::string canonical(const std::string& json) {
  return nlohmann::json::parse(json).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// " at trace_target.cpp:240": where addr2line puts `va` of the trace target.
std::string addr2line_at(uint64_t va) {
  std::string text = test::command_output("addr2line -e " XREF_TRACE_TARGET " " + to_hex(va));
  text = text.substr(0, text.find_first_of(" \n"));
  return " at " + text.substr(text.rfind('/') + 1);
}

std::vector<std::string> shown(const nlohmann::json& window, const Target& target) {
  render::HelperNames names(target.space);
  return render::window_lines(window, names, {});
}

TEST_F(WindowFormatTest, JsonIsCanonicalAndItsTextNamesWhatTheRecordsSay) {
  const uint32_t handle = function_id("svc::handle_request");
  const uint32_t validate = function_id("svc::validate");
  WindowCollector windows(*plan_);
  auto begin = record(0, XREF_EVENT_ENTRY, 0, handle, probe_index(handle, XREF_PROBE_ENTRY));
  begin.flags = XREF_EVENT_F_WINDOW_BEGIN;
  begin.fetch_count = 1;
  begin.values[0] = 0x7ff3106f6a80;
  auto entry = record(1, XREF_EVENT_ENTRY, 1, validate, probe_index(validate, XREF_PROBE_ENTRY));
  entry.fetch_count = 1;
  entry.values[0] = static_cast<uint64_t>(-2);
  auto unreadable = record(2, XREF_EVENT_ENTRY, 2, validate, probe_index(validate, XREF_PROBE_ENTRY));
  unreadable.fetch_count = 1;
  unreadable.fetch_failed = 1;
  unreadable.fetch_error[0] = -14;
  auto inner_return = record(3, XREF_EVENT_RETURN, 2, validate, probe_index(validate, XREF_PROBE_RET));
  inner_return.flags = XREF_EVENT_F_INFERRED;
  // seq 4 never arrives: a lost event.
  auto end = record(6, XREF_EVENT_WINDOW_END, 0, XREF_FUNCTION_NONE, 0xffffffff);
  end.status = XREF_WINDOW_COMPLETE;
  for (const auto& one : {begin, entry, unreadable, inner_return,
                          record(5, XREF_EVENT_RETURN, 0, handle, probe_index(handle, XREF_PROBE_RET))}) {
    EXPECT_FALSE(windows.add(one));
  }
  ASSERT_EQ(windows.add(end), 1u);

  WindowFormat format(*target_, *plan_);
  std::string json_text_out;
  format.append_json(json_text_out, windows.windows().at(1), nullptr);
  ASSERT_EQ(canonical(json_text_out), json_text_out);
  const nlohmann::json window = nlohmann::json::parse(json_text_out);
  const std::vector<std::string> lines = shown(window, *target_);

  EXPECT_EQ(window["status"], "incomplete");
  EXPECT_EQ(window["lost_events"], 1);
  EXPECT_EQ(window["possible_loss"], true);
  EXPECT_EQ(window["tid"], 4242);
  EXPECT_EQ(window["start_va"], to_hex(plan_->start_va));
  ASSERT_EQ(window["events"].size(), 5u);
  const nlohmann::json& first = window["events"][0];
  EXPECT_EQ(first["symbol"], plan_->functions[handle].symbol.demangled);
  EXPECT_EQ(first["target_va"], to_hex(plan_->functions[handle].symbol.start));
  EXPECT_EQ(first["kind"], "entry");
  EXPECT_EQ(first["fetches"][0]["value"], "0x7ff3106f6a80");
  EXPECT_EQ(window["start_fetches"], first["fetches"]);
  EXPECT_EQ(window["events"][1]["fetches"][0]["signed_value"], -2);
  EXPECT_EQ(window["events"][1]["fetches"][0]["type"], "s32");
  EXPECT_EQ(window["events"][2]["fetches"][0]["error"], "unreadable: EFAULT (-14)");
  EXPECT_TRUE(window["events"][2]["fetches"][0]["value"].is_null());
  EXPECT_EQ(window["events"][3]["inferred"], true);
  EXPECT_EQ(window["events"][4]["seq"], 5);

  // Timestamps are 1000 + 10 * seq: handle_request ran 50 ns to its return
  // (seq 5), the window 60 ns to its end record (seq 6); the inner validate
  // 10 ns to its inferred return; the outer one never ended in the window.
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "window 1  thread 4242  incomplete (events may be missing)  ran 60 ns  5 events  lost 1  "
                      "req=0x7ff3106f6a80");
  // No call site (the records' return address is 0): a start entry says
  // where its function is, as addr2line does.
  const std::string handle_at = addr2line_at(plan_->functions[handle].symbol.start);
  const std::string validate_at = addr2line_at(plan_->functions[validate].symbol.start);
  EXPECT_EQ(lines[1], "  1:0  50 ns  > svc::handle_request" + handle_at + "  req=0x7ff3106f6a80");
  EXPECT_EQ(lines[2], "  1:1           > svc::validate" + validate_at + "  id=-2");
  EXPECT_EQ(lines[3], "  1:2  10 ns      > svc::validate" + validate_at + "  id=<unreadable: EFAULT>");
  EXPECT_EQ(lines[4], "  1:3             < svc::validate [inferred]");
  // Its child validate did not end in the window: no self time.
  EXPECT_EQ(lines[5], "  1:5         < svc::handle_request");
}

TEST_F(WindowFormatTest, AnOpenWindowAtTheEndAndTheJsonLine) {
  const uint32_t handle = function_id("svc::handle_request");
  WindowCollector windows(*plan_);
  auto begin = record(0, XREF_EVENT_ENTRY, 0, handle, probe_index(handle, XREF_PROBE_ENTRY));
  begin.flags = XREF_EVENT_F_WINDOW_BEGIN;
  begin.fetch_count = 1;
  begin.values[0] = 0x10;
  (void)windows.add(begin);
  TraceRun run;
  run.target_exited = true;
  WindowFormat format(*target_, *plan_);
  std::string json;
  format.append_json(json, windows.windows().at(1), &run);
  ASSERT_EQ(canonical(json), json);
  const nlohmann::json window = nlohmann::json::parse(json);
  EXPECT_EQ(window["status"], "target_exited");
  EXPECT_EQ(window["duration_ns"], 0);
  EXPECT_EQ(window["end_timestamp_ns"], 1000);
  const std::vector<std::string> lines = shown(window, *target_);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "window 1  thread 4242  incomplete (the process exited)  ran 0 ns  1 event  lost 0  req=0x10");
  // No call site (the return address was 0): the start entry says where the function is.
  EXPECT_EQ(lines[1], "  1:0  > svc::handle_request" + addr2line_at(plan_->functions[handle].symbol.start) +
                          "  req=0x10");
}

// :string fetches: the window keeps each string beside its events, the JSON
// writes it as probe does ({length name string truncated type}), the text
// shows it quoted (cut ones with "…" and the bound), and a saved file with
// it reads back (trace show's checks) to the very same text.
TEST_F(WindowFormatTest, StringFetchesGoThroughTheJsonTextAndASavedFile) {
  TraceRequest request;
  request.start = "svc::handle_request";
  request.fetch = "n=%si:u64,key=+0(%di):string[8],name=+8(%di):string";
  request.start_filter = R"(key == "set*")";
  auto planned = plan_trace(*target_, request);
  ASSERT_TRUE(planned) << planned.error().message;
  const TracePlan& plan = *planned;
  ASSERT_EQ(plan.start_filter->strings.size(), 1u);
  const uint32_t handle = plan.functions[0].id;
  uint32_t start_probe = 0;
  while (start_probe < plan.probes.size() && !plan.probes[start_probe].start) ++start_probe;
  ASSERT_LT(start_probe, plan.probes.size());
  auto with_strings = [&](uint64_t window, const std::string& key, bool cut, const std::string& name) {
    xref_trace_event event = record(0, XREF_EVENT_ENTRY, 0, handle, start_probe);
    event.window_id = window;
    event.flags = XREF_EVENT_F_WINDOW_BEGIN;
    event.fetch_count = 3;
    event.values[0] = 7;
    event.values[1] = key.size() | (cut ? XREF_STRING_CUT : 0);
    std::memcpy(event.strings[0], key.data(), key.size());
    event.values[2] = name.size();
    std::memcpy(event.strings[1], name.data(), name.size());
    return event;
  };
  // A string the program could not read: flagged, no bytes.
  auto unreadable = with_strings(2, "", false, "");
  unreadable.fetch_failed = 1u << 2;
  unreadable.fetch_error[2] = -14;
  WindowCollector windows(plan);
  EXPECT_FALSE(windows.add(with_strings(1, "settings", true, "say \"hi\"\n")));
  EXPECT_FALSE(windows.add(unreadable));
  EXPECT_EQ(windows.windows().at(1).strings, "settingssay \"hi\"\n");

  WindowFormat format(*target_, plan);
  std::string first_json, second_json;
  format.append_json(first_json, windows.windows().at(1), nullptr);
  format.append_json(second_json, windows.windows().at(2), nullptr);
  ASSERT_EQ(canonical(first_json), first_json);
  const nlohmann::json first = nlohmann::json::parse(first_json);
  const nlohmann::json second = nlohmann::json::parse(second_json);
  EXPECT_EQ(first["start_fetches"][1], (nlohmann::json{{"length", 8}, {"name", "key"}, {"string", "settings"},
                                                       {"truncated", true}, {"type", "string[8]"}}));
  EXPECT_EQ(first["start_fetches"][2], (nlohmann::json{{"length", 9}, {"name", "name"}, {"string", "say \"hi\"\n"},
                                                       {"truncated", false}, {"type", "string[64]"}}));
  EXPECT_EQ(second["start_fetches"][1]["string"], "");
  EXPECT_EQ(second["start_fetches"][2]["error"], "unreadable: EFAULT (-14)");
  const std::vector<std::string> lines = shown(first, *target_);
  ASSERT_EQ(lines.size(), 2u);
  const std::string values = "n=0x7 key=\"settings\u2026\" (cut at 8 bytes) name=\"say \\\"hi\\\"\\n\"";
  EXPECT_EQ(lines[0], "window 1  thread 4242  incomplete (still open when the trace stopped)  ran 0 ns  1 event  lost 0  " +
                          values);
  EXPECT_NE(lines[1].find(values), std::string::npos) << lines[1];

  // Saved and read back: trace show accepts it and writes the same text.
  const nlohmann::json document = {{"schema_version", 1}, {"operation", "live_trace"}, {"process", {{"pid", 6}}},
                                   {"windows", {first, second}}};
  auto file = parse_trace_file(document.dump());
  ASSERT_TRUE(file) << file.error().message;
  auto selected = select_windows(*file, std::nullopt);
  ASSERT_TRUE(selected) << selected.error().message;
  ASSERT_EQ(selected->size(), 2u);
  EXPECT_EQ(shown((*selected)[0], *target_), lines);
  EXPECT_EQ(shown((*selected)[1], *target_), shown(second, *target_));
  EXPECT_NE(shown(second, *target_)[0].find("key=\"\" name=<unreadable: EFAULT>"), std::string::npos);
}

}  // namespace
}  // namespace xref
