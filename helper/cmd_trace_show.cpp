// xref trace show FILE [--window N] [--tree [--depth D] [--bin PATH]] [--json]:
// the windows of a saved trace, or each against the static callee tree of
// its start function; offline.
#include <iostream>
#include <memory>
#include <optional>

#include "commands.h"
#include "option_values.h"
#include "report.h"
#include "trace_file.h"
#include "trace_show.h"
#include "trace_text.h"

namespace xref {
namespace {

struct TraceShowOptions {
  std::string file;
  std::optional<uint64_t> window;
  bool tree = false;
  int depth = 0;  // 0: the depth the window reached
  std::string bin;
  bool json = false;
};

struct ShownWindow {
  nlohmann::json window;
  std::optional<WindowTree> tree;
};

Result<std::vector<ShownWindow>> show_windows(const TraceShowOptions& options, const TraceFile& file,
                                              std::vector<std::string>& warnings) {
  auto windows = select_windows(file, options.window);
  if (!windows) return windows.error();
  std::vector<ShownWindow> shown;
  for (auto& window : *windows) shown.push_back({std::move(window), std::nullopt});
  if (!options.tree) return shown;
  auto image = open_traced_binary(file.process, options.bin, warnings);
  if (!image) return image.error();
  const TracedProbes traced = traced_probes(file.summary);
  for (ShownWindow& one : shown) {
    const int depth = options.depth > 0 ? options.depth : reached_depth(one.window);
    auto tree = window_tree(**image, one.window, depth, traced);
    if (!tree) return tree.error();
    one.tree = std::move(*tree);
  }
  return shown;
}

int run_trace_show(const TraceShowOptions& options) {
  Envelope envelope;
  envelope.operation = "trace_show";
  envelope.limits = {{"max_depth", 16}};
  std::optional<Result<std::vector<ShownWindow>>> shown;
  auto file = load_trace_file(options.file);
  if (!file) {
    envelope.error = file.error();
  } else {
    envelope.process = file->process;
    shown = show_windows(options, *file, envelope.warnings);
    if (!*shown) envelope.error = shown->error();
  }
  if (!envelope.error) {
    nlohmann::json windows = nlohmann::json::array();
    for (const ShownWindow& one : **shown) {
      windows.push_back(one.tree ? window_tree_json(one.window, *one.tree) : one.window);
    }
    envelope.data = {{"file", options.file}, {"tree", options.tree}, {"windows", windows}};
  }
  return report({options.json}, envelope, [&](std::ostream& out) {
    if (envelope.error) return;
    for (const ShownWindow& one : **shown) {
      if (one.tree) print_window_tree(out, one.window, *one.tree);
      else print_window_text(out, one.window);
    }
  });
}

}  // namespace

CLI::App* setup_trace_show(CLI::App& trace, int& exit_status) {
  auto options = std::make_shared<TraceShowOptions>();
  CLI::App* command = trace.add_subcommand(
      "show", "print the windows of a saved trace (xref trace --json or --jsonl output); with --tree, each against "
              "the static callee tree of its start function: what was called, how often, and what was not");
  command->add_option("file", options->file, "the saved trace")->required();
  command->add_option("--window", options->window, "only the window with this window_id")
      ->transform(number_in(kWindowIds));
  command->add_flag("--tree", options->tree,
                    "match each window against the static callee tree of its start function; callees that were "
                    "not called are marked (not called)");
  CLI::Option* tree = command->get_option("--tree");
  command->add_option("--depth", options->depth,
                      "levels of the static tree with --tree (default: the depth the window reached, at least 1)")
      ->transform(number_in({1, 16}))
      ->needs(tree);
  command->add_option("--bin,-b", options->bin,
                      "the traced executable for --tree (default: the trace's process.exe_path); its build-id and "
                      "SHA-256 must match the trace's")
      ->needs(tree);
  command->add_flag("--json", options->json, "print one JSON document (operation trace_show) instead of text");
  command->callback([options, &exit_status] { exit_status = run_trace_show(*options); });
  return command;
}

}  // namespace xref
