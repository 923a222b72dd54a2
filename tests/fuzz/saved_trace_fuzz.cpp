// Saved traces: the input is a file given to `xref trace show`, `export` and
// `diff`, a `--json` document or a `--jsonl` stream. The commands run as the
// CLI runs them (their CLI11 definitions, the reader, the renderers), with
// stdout and stderr captured; what they print as JSON must parse. `show
// --tree` matches the windows against the binary the committed traces were
// taken from.
#include <CLI/CLI.hpp>
#include <iostream>
#include <sstream>
#include <vector>

#include "fuzz_support.h"
#include "trace/commands.h"
#include "trace/saved/file.h"

using namespace xref;

namespace {

struct Printed {
  std::string out;
  std::string err;
};

// `xref trace WORDS...` with the offline subcommands only.
Printed run_trace_command(std::vector<std::string> words) {
  CLI::App app{"xref", "xref"};
  CLI::App* trace = app.add_subcommand("trace");
  int exit_status = 0;
  setup_trace_show(*trace, exit_status);
  setup_trace_export(*trace, exit_status);
  setup_trace_diff(*trace, exit_status);
  words.insert(words.begin(), "trace");

  std::ostringstream out, err;
  std::streambuf* const saved_out = std::cout.rdbuf(out.rdbuf());
  std::streambuf* const saved_err = std::cerr.rdbuf(err.rdbuf());
  std::vector<std::string> reversed(words.rbegin(), words.rend());  // as cli.cpp: CLI11 parses it reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& error) {
    fuzz::fail("the fuzz target's own command line does not parse", error.what());
  }
  std::cout.rdbuf(saved_out);
  std::cerr.rdbuf(saved_err);
  return {out.str(), err.str()};
}

void require_json_document(const Printed& printed, const char* command) {
  fuzz::require(nlohmann::json::accept(printed.out), command, printed.out);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::MemoryFile file(data, size);
  const std::string path = file.path();
  run_trace_command({"show", path});
  require_json_document(run_trace_command({"show", path, "--json"}), "trace show --json printed no JSON document");
  run_trace_command({"show", path, "--tree", "--bin", XREF_FUZZ_TRACED_BINARY});
  require_json_document(run_trace_command({"show", path, "--tree", "--bin", XREF_FUZZ_TRACED_BINARY, "--json"}),
                        "trace show --tree --json printed no JSON document");

  // export prints nothing on stdout when it fails; diff compares the first
  // window with the last.
  const Printed exported = run_trace_command({"export", path});
  if (!exported.out.empty()) require_json_document(exported, "trace export printed no JSON document");
  std::vector<std::string> diff = {"diff", path, path, "--allow-build-mismatch", "--json"};
  if (auto saved = parse_trace_file(std::string(fuzz::as_text(data, size)))) {
    const nlohmann::json& last = saved->windows.back();
    if (last.is_object() && last.contains("window_id") && last["window_id"].is_number_unsigned()) {
      diff.push_back("--window-b");
      diff.push_back(std::to_string(last["window_id"].get<uint64_t>()));
    }
  }
  require_json_document(run_trace_command(diff), "trace diff --json printed no JSON document");
  return 0;
}
