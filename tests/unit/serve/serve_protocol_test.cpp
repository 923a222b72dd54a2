// The helper protocol's framing and validation (docs/protocol.md): each
// malformed input gets its exact error code, and the right id.
#include <gtest/gtest.h>

#include "input/sudo_user.h"
#include "process/target_owner.h"
#include "serve/context.h"
#include "serve/protocol.h"

namespace xref::serve {
namespace {

nlohmann::json reject(const std::string& text) {
  ParsedLine parsed = parse_request({text, false});
  const auto* rejected = std::get_if<RejectedLine>(&parsed);
  if (rejected == nullptr) return nullptr;
  return rejected->response;
}

Request accept(const std::string& text) {
  ParsedLine parsed = parse_request({text, false});
  EXPECT_TRUE(std::holds_alternative<Request>(parsed)) << text;
  return std::holds_alternative<Request>(parsed) ? std::get<Request>(parsed) : Request{};
}

std::vector<LineSplitter::Line> lines_of(LineSplitter& splitter) {
  std::vector<LineSplitter::Line> lines;
  while (auto line = splitter.next()) lines.push_back(*line);
  return lines;
}

TEST(ServeFraming, SplitsLinesAcrossChunks) {
  LineSplitter splitter;
  splitter.feed("{\"id\":1}\n{\"i");
  splitter.feed("d\":2}\n\n{\"id\":3}");
  auto lines = lines_of(splitter);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "{\"id\":1}");
  EXPECT_EQ(lines[1].text, "{\"id\":2}");
  EXPECT_EQ(lines[2].text, "");
  splitter.finish();  // the last line had no newline
  lines = lines_of(splitter);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "{\"id\":3}");
}

// ~300k nested levels fit in a 1 MiB line; parsing them must not crash,
// and the answer is the usual parse_error (id null: none was read).
TEST(ServeProtocol, DeeplyNestedLinesAreParseErrors) {
  std::string objects;  // 200k levels: 300k of them are over the line limit
  for (int level = 0; level < 200000; ++level) objects += "{\"a\":";
  const std::string params = "{\"id\": 1, \"method\": \"hello\", \"params\": {\"x\": " + std::string(300000, '[') +
                             std::string(300000, ']') + "}}";
  for (const std::string& line : {std::string(300000, '['), objects, params}) {
    ASSERT_LT(line.size(), kMaxLineBytes);
    const nlohmann::json response = reject(line);
    ASSERT_TRUE(response.is_object()) << "accepted";
    EXPECT_TRUE(response["id"].is_null());
    EXPECT_EQ(response["error"]["code"], "parse_error");
    EXPECT_NE(response["error"]["message"].get<std::string>().find("nested deeper than 256 levels"),
              std::string::npos)
        << response.dump();
  }
  // Nesting under the limit is an ordinary request.
  EXPECT_EQ(accept(R"({"id": 2, "method": "hello", "params": {"x": [[[[1]]]]}})").params["x"][0][0][0][0], 1);
}

TEST(ServeFraming, OversizedLineIsReportedOnceAndSkipped) {
  LineSplitter splitter(16);
  splitter.feed("0123456789");
  EXPECT_FALSE(splitter.next());
  splitter.feed("0123456789");  // past the limit, no newline yet: reported now
  auto lines = lines_of(splitter);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].too_large);
  splitter.feed(std::string(100, 'x'));  // more of the same line: skipped
  EXPECT_FALSE(splitter.next());
  splitter.feed("tail\n{\"id\":9}\n");
  lines = lines_of(splitter);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].too_large);
  EXPECT_EQ(lines[0].text, "{\"id\":9}");
}

TEST(ServeFraming, LineOfExactlyTheLimitIsAccepted) {
  LineSplitter splitter(8);
  splitter.feed("12345678\n123456789\nok\n");
  auto lines = lines_of(splitter);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].text, "12345678");
  EXPECT_TRUE(lines[1].too_large);
  EXPECT_EQ(lines[2].text, "ok");
}

TEST(ServeFraming, OversizedLineGetsMessageTooLarge) {
  LineSplitter splitter;
  splitter.feed(std::string(kMaxLineBytes + 1, ' '));
  auto line = splitter.next();
  ASSERT_TRUE(line);
  ParsedLine parsed = parse_request(*line);
  ASSERT_TRUE(std::holds_alternative<RejectedLine>(parsed));
  const auto& response = std::get<RejectedLine>(parsed).response;
  EXPECT_EQ(response["error"]["code"], "message_too_large");
  EXPECT_TRUE(response["id"].is_null());
}

TEST(ServeRequest, MalformedJsonIsParseError) {
  const auto response = reject("{\"id\": 1, \"method\": ");
  EXPECT_EQ(response["error"]["code"], "parse_error");
  EXPECT_TRUE(response["id"].is_null());
  EXPECT_FALSE(response["error"].contains("exit_status"));
}

TEST(ServeRequest, NonObjectIsParseError) {
  for (const char* text : {"[1,2]", "42", "\"hello\"", "null"}) {
    const auto response = reject(text);
    EXPECT_EQ(response["error"]["code"], "parse_error") << text;
    EXPECT_TRUE(response["id"].is_null()) << text;
  }
}

TEST(ServeRequest, MissingOrBadIdIsInvalidRequestWithNullId) {
  for (const char* text : {R"({"method":"sessions"})", R"({"id":"7","method":"sessions"})",
                           R"({"id":1.5,"method":"sessions"})", R"({"id":true,"method":"sessions"})"}) {
    const auto response = reject(text);
    EXPECT_EQ(response["error"]["code"], "invalid_request") << text;
    EXPECT_TRUE(response["id"].is_null()) << text;
  }
}

TEST(ServeRequest, MissingMethodIsInvalidRequestWithTheId) {
  for (const char* text : {R"({"id":7})", R"({"id":7,"method":3})"}) {
    const auto response = reject(text);
    EXPECT_EQ(response["error"]["code"], "invalid_request") << text;
    EXPECT_EQ(response["id"], 7) << text;
  }
}

TEST(ServeRequest, ParamsMustBeAnObject) {
  const auto response = reject(R"({"id":8,"method":"sessions","params":[1]})");
  EXPECT_EQ(response["error"]["code"], "invalid_request");
  EXPECT_EQ(response["id"], 8);
  EXPECT_EQ(accept(R"({"id":8,"method":"sessions","params":null})").params, nlohmann::json::object());
}

TEST(ServeRequest, UnknownMethod) {
  const auto response = reject(R"({"id":9,"method":"session.show","params":{}})");
  EXPECT_EQ(response["error"]["code"], "unknown_method");
  EXPECT_EQ(response["id"], 9);
}

TEST(ServeRequest, WellFormedRequest) {
  const Request request = accept(R"({"id":10,"method":"command","params":{"argv":["maps"]}})");
  EXPECT_EQ(request.id, 10);
  EXPECT_EQ(request.method, "command");
  EXPECT_EQ(request.params["argv"][0], "maps");
}

TEST(ServeHandshake, NotReadyBeforeHello) {
  Handshake handshake;
  const Request maps = accept(R"({"id":2,"method":"command","params":{"argv":["doctor"]}})");
  auto refused = handshake.gate(maps);
  ASSERT_TRUE(refused);
  EXPECT_EQ((*refused)["error"]["code"], "not_ready");
  EXPECT_EQ((*refused)["id"], 2);
  EXPECT_FALSE(handshake.gate(accept(R"({"id":3,"method":"hello","params":{"protocol":1}})")));
}

TEST(ServeHandshake, VersionMismatchNamesBothVersions) {
  Handshake handshake;
  const auto response = handshake.answer(accept(R"({"id":1,"method":"hello","params":{"protocol":3}})"));
  EXPECT_EQ(response["error"]["code"], "version_mismatch");
  EXPECT_EQ(response["id"], 1);
  const std::string message = response["error"]["message"];
  EXPECT_NE(message.find("protocol 3"), std::string::npos) << message;
  EXPECT_NE(message.find("protocols 1 to 2"), std::string::npos) << message;
  EXPECT_FALSE(handshake.done());
  EXPECT_TRUE(handshake.gate(accept(R"({"id":2,"method":"sessions"})")));
}

TEST(ServeHandshake, HelloWithoutVersionIsInvalidRequest) {
  Handshake handshake;
  const auto response = handshake.answer(accept(R"({"id":1,"method":"hello"})"));
  EXPECT_EQ(response["error"]["code"], "invalid_request");
  EXPECT_FALSE(handshake.done());
}

TEST(ServeHandshake, HelloThenRequestsRun) {
  Handshake handshake;
  const auto response = handshake.answer(accept(R"({"id":1,"method":"hello","params":{"protocol":1}})"));
  EXPECT_EQ(response["result"]["protocol"], 1);  // the version the front end chose
  EXPECT_EQ(handshake.version(), 1);
  EXPECT_EQ(response["id"], 1);
  EXPECT_TRUE(handshake.done());
  EXPECT_FALSE(handshake.gate(accept(R"({"id":2,"method":"sessions"})")));
}

TEST(ServeErrors, CliErrorsCarryTheirExitStatus) {
  const auto error = error_object(cli_error(make_error(ErrorCode::no_such_process, "no process with PID 9", "hint")));
  EXPECT_EQ(error["code"], "no_such_process");
  EXPECT_EQ(error["exit_status"], 3);
  EXPECT_EQ(error["hint"], "hint");
  const auto own = error_object(protocol_error("unknown_session", "no session 4"));
  EXPECT_EQ(own["code"], "unknown_session");
  EXPECT_FALSE(own.contains("exit_status"));
}

TEST(ServeContext, ArgvMustBeNonEmptyStrings) {
  for (const char* params : {R"({})", R"({"argv":[]})", R"({"argv":"maps"})", R"({"argv":["maps",1]})"}) {
    auto words = parse_argv(nlohmann::json::parse(params));
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(words)) << params;
    EXPECT_EQ(std::get<ProtocolError>(words).code, "invalid_request") << params;
  }
}

TEST(ServeContext, HereAndBreakpointsFillTheDebuggerContext) {
  auto parsed = parse_context(nlohmann::json::parse(R"({"context":{
      "pid": 4242, "executable": "/srv/app",
      "here": {"tid": 4243, "pc": "0x55d0c9e01a48", "cfa": 140737488346464},
      "breakpoints": [{"id": 2, "enabled": false, "locations": [{"id": "2.1", "address": "0x1000", "enabled": true}]}]}})"));
  ASSERT_TRUE(std::holds_alternative<RequestContext>(parsed));
  const auto& context = std::get<RequestContext>(parsed);
  EXPECT_EQ(context.pid, 4242);
  EXPECT_EQ(context.executable, "/srv/app");
  EXPECT_TRUE(context.debugger.present);
  ASSERT_TRUE(context.debugger.here);
  EXPECT_EQ(context.debugger.here->tid, 4243u);
  EXPECT_EQ(context.debugger.here->pc, 0x55d0c9e01a48u);
  EXPECT_EQ(context.debugger.here->cfa, 140737488346464u);
  ASSERT_EQ(context.debugger.breakpoints.size(), 1u);
  EXPECT_EQ(context.debugger.breakpoints[0].id, 2u);
  EXPECT_FALSE(context.debugger.breakpoints[0].enabled);
  ASSERT_EQ(context.debugger.breakpoints[0].locations.size(), 1u);
  EXPECT_EQ(context.debugger.breakpoints[0].locations[0].id, "2.1");
  EXPECT_EQ(context.debugger.breakpoints[0].locations[0].address, 0x1000u);
}

TEST(ServeContext, NoContextIsNoDebugger) {
  auto parsed = parse_context(nlohmann::json::object());
  ASSERT_TRUE(std::holds_alternative<RequestContext>(parsed));
  EXPECT_FALSE(std::get<RequestContext>(parsed).debugger.present);
  EXPECT_FALSE(std::get<RequestContext>(parsed).pid);
}

TEST(ServeContext, MalformedContextIsInvalidRequest) {
  for (const char* params :
       {R"({"context":[]})", R"({"context":{"pid":-1}})", R"({"context":{"pid":"42"}})",
        R"({"context":{"here":{"tid":1,"pc":"0x12g4","cfa":"0x10"}}})", R"({"context":{"here":{"pc":"0x1","cfa":"0x2"}}})",
        R"({"context":{"breakpoints":[{"locations":[]}]}})",
        R"({"context":{"breakpoints":[{"id":1,"locations":[{"id":"1.1"}]}]}})"}) {
    auto parsed = parse_context(nlohmann::json::parse(params));
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(parsed)) << params;
    EXPECT_EQ(std::get<ProtocolError>(parsed).code, "invalid_request") << params;
  }
}

TEST(ServeContext, SessionIdIsAPositiveInteger) {
  EXPECT_EQ(std::get<uint64_t>(parse_session_id(nlohmann::json{{"session", 3}})), 3u);
  for (const nlohmann::json& params : {nlohmann::json::object(), nlohmann::json{{"session", "3"}},
                                       nlohmann::json{{"session", 0}}, nlohmann::json{{"session", -2}}}) {
    auto id = parse_session_id(params);
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(id)) << params.dump();
    EXPECT_EQ(std::get<ProtocolError>(id).code, "invalid_request");
  }
}

TEST(ServeContext, ReleaseNamesASessionLiveAddressesAndAReason) {
  auto release = parse_release(
      nlohmann::json{{"session", 2}, {"addresses", {"0x55d0c9e01a40", 4096}}, {"reason", "breakpoint 3"}});
  ASSERT_TRUE(std::holds_alternative<ReleaseRequest>(release));
  const auto& parsed = std::get<ReleaseRequest>(release);
  EXPECT_EQ(parsed.session, 2u);
  EXPECT_EQ(parsed.addresses, (std::vector<uint64_t>{0x55d0c9e01a40, 4096}));
  EXPECT_EQ(parsed.reason, "breakpoint 3");
  for (const nlohmann::json& params :
       {nlohmann::json{{"addresses", {"0x10"}}}, nlohmann::json{{"session", 1}},
        nlohmann::json{{"session", 1}, {"addresses", nlohmann::json::array()}},
        nlohmann::json{{"session", 1}, {"addresses", {"zz"}}}, nlohmann::json{{"session", 1}, {"addresses", {-1}}},
        nlohmann::json{{"session", 1}, {"addresses", {"0x10"}}, {"reason", 7}}}) {
    auto refused = parse_release(params);
    ASSERT_TRUE(std::holds_alternative<ProtocolError>(refused)) << params.dump();
    EXPECT_EQ(std::get<ProtocolError>(refused).code, "invalid_request");
  }
}

TEST(ServeTargetOwner, SudoUid) {
  EXPECT_FALSE(*requesting_uid_from_sudo(nullptr));
  EXPECT_FALSE(*requesting_uid_from_sudo(""));
  EXPECT_FALSE(*requesting_uid_from_sudo("0"));  // root may trace anything
  EXPECT_EQ(**requesting_uid_from_sudo("1000"), 1000u);
  auto bad = requesting_uid_from_sudo("10x0");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::permission_denied);
}

}  // namespace
}  // namespace xref::serve
