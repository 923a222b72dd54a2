// `xref serve` input: the bytes a front end (or anything that can write to
// the helper) sends. They are split into lines as serve reads them, whole
// and in small pieces (the same lines either way), and with a small line
// limit (no line past it); each line is parsed as a request and checked as
// serve's dispatch checks it (handshake, params.argv, params.context,
// params.session), and every response is rendered as the writer renders it.
#include <vector>

#include "fuzz_support.h"
#include "serve/context.h"
#include "serve/protocol.h"

using namespace xref;
using namespace xref::serve;

namespace {

constexpr size_t kSmallLimit = 64;

std::vector<LineSplitter::Line> split(std::string_view bytes, size_t piece, size_t limit) {
  LineSplitter splitter(limit);
  for (size_t at = 0; at < bytes.size(); at += piece) splitter.feed(bytes.substr(at, piece));
  splitter.finish();
  std::vector<LineSplitter::Line> lines;
  while (auto line = splitter.next()) lines.push_back(std::move(*line));
  return lines;
}

void render(const nlohmann::json& message) {
  const std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  fuzz::require(line.find('\n') == std::string::npos, "a protocol line with a line break in it", line);
}

void render_error(const nlohmann::json& id, const ProtocolError& error) {
  fuzz::require(!error.message.empty(), "a protocol error without a message");
  render(error_response(id, error));
}

void handle(Handshake& handshake, const LineSplitter::Line& line) {
  const ParsedLine parsed = parse_request(line);
  if (const auto* rejected = std::get_if<RejectedLine>(&parsed)) {
    render(rejected->response);
    return;
  }
  const Request& request = std::get<Request>(parsed);
  fuzz::require(is_known_method(request.method), "an unknown method was accepted", request.method);
  if (auto refused = handshake.gate(request)) render(*refused);
  if (request.method == "hello") render(handshake.answer(request));
  // Each method reads some of these; all are checked whatever the method.
  const auto argv = parse_argv(request.params);
  if (const auto* error = std::get_if<ProtocolError>(&argv)) render_error(request.id, *error);
  const auto context = parse_context(request.params);
  if (const auto* error = std::get_if<ProtocolError>(&context)) render_error(request.id, *error);
  const auto session = parse_session_id(request.params);
  if (const auto* error = std::get_if<ProtocolError>(&session)) render_error(request.id, *error);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::as_text(data, size);
  const std::vector<LineSplitter::Line> lines = split(bytes, bytes.size() + 1, kMaxLineBytes);
  const std::vector<LineSplitter::Line> piecewise = split(bytes, 3, kMaxLineBytes);
  fuzz::require(lines.size() == piecewise.size(), "fed in pieces, the input splits into another number of lines");
  for (size_t index = 0; index < lines.size(); ++index) {
    fuzz::require(lines[index].text == piecewise[index].text && lines[index].too_large == piecewise[index].too_large,
                  "fed in pieces, the input splits into other lines");
  }
  for (const LineSplitter::Line& line : split(bytes, 5, kSmallLimit)) {
    fuzz::require(line.text.size() <= kSmallLimit, "a line longer than the splitter's limit");
    fuzz::require(!line.too_large || line.text.empty(), "an oversized line kept its text");
  }
  Handshake handshake;
  for (const LineSplitter::Line& line : lines) handle(handshake, line);
  return 0;
}
