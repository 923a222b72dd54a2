// xref trace show FILE [--window N] [--tree [--depth D] [--bin PATH]] [--json]:
// the windows of a saved trace, or each against the static callee tree of
// its start function; offline.
#include <iostream>
#include <memory>
#include <optional>

#include "command/option_values.h"
#include "output/report.h"
#include "trace/commands.h"
#include "trace/saved/file.h"
#include "trace/saved/show.h"
#include "render/helper_names.h"
#include "render/window_text.h"

namespace xref {
namespace {

struct TraceShowOptions {
  std::string file;
  std::optional<uint64_t> window;
  bool tree = false;
  int depth = 0;  // 0: the depth the window reached
  std::string bin;
  bool json = false;
  bool addresses = false;
};

// The windows to show, read back one at a time: a saved trace may be far
// larger than the memory its windows take one by one.
class WindowShow {
 public:
  WindowShow(const TraceShowOptions& options, Envelope& envelope) : options_(options), envelope_(envelope) {}

  // Opens the trace (every window checked) and, with --tree, the binary.
  Result<void> open() {
    auto trace = SavedTrace::open(options_.file, check_saved_window);
    if (!trace) return trace.error();
    trace_ = std::move(*trace);
    envelope_.process = trace_->process();
    auto selected = select_window_indices(*trace_, options_.window);
    if (!selected) return selected.error();
    selected_ = std::move(*selected);
    if (!options_.tree) {
      // Names and lines from the traced build when it is still here (or
      // --bin names a copy); else from what the trace recorded.
      std::vector<std::string> unchecked;
      auto image = open_traced_binary(trace_->process(), options_.bin, unchecked);
      if (!image && !options_.bin.empty()) return image.error();
      if (image && unchecked.empty()) image_ = std::move(*image);
      return {};
    }
    auto image = open_traced_binary(trace_->process(), options_.bin, envelope_.warnings);
    if (!image) return image.error();
    image_ = std::move(*image);
    traced_ = traced_probes(trace_->summary());
    return {};
  }

  // Who names the windows' addresses in text.
  std::unique_ptr<render::Names> names() const {
    if (image_) return std::make_unique<render::HelperNames>(image_);
    return std::make_unique<render::NoNames>();
  }

  // Each selected window, with its tree under --tree; stops at the first
  // error, which goes into the envelope.
  void each(const std::function<void(const nlohmann::json& window, const WindowTree* tree)>& show) {
    auto shown = trace_->read_windows(selected_, [&](size_t, nlohmann::json&& window) -> Result<void> {
      if (!options_.tree) {
        show(window, nullptr);
        return {};
      }
      const int depth = options_.depth > 0 ? options_.depth : reached_depth(window);
      auto tree = window_tree(*image_, window, depth, traced_);
      if (!tree) return tree.error();
      show(window, &*tree);
      return {};
    });
    if (!shown) envelope_.error = shown.error();
  }

 private:
  const TraceShowOptions& options_;
  Envelope& envelope_;
  std::optional<SavedTrace> trace_;
  std::vector<size_t> selected_;
  std::shared_ptr<const ElfImage> image_;
  TracedProbes traced_;
};

int run_trace_show(const TraceShowOptions& options) {
  Envelope envelope;
  envelope.operation = "trace_show";
  envelope.limits = {{"max_depth", 16}};
  WindowShow windows(options, envelope);
  if (auto opened = windows.open(); !opened) {
    envelope.error = opened.error();
    return report({options.json}, envelope, nullptr);
  }
  if (options.json) {
    envelope.data = {{"file", options.file}, {"tree", options.tree}};
    return report_json_streamed(envelope, "windows", [&](const EmitElement& emit) {
      windows.each([&](const nlohmann::json& window, const WindowTree* tree) {
        emit(tree ? window_tree_json(window, *tree) : window);
      });
    });
  }
  const std::unique_ptr<render::Names> names = windows.names();
  render::WindowStyle style;
  style.addresses = options.addresses;
  return report({false}, envelope, [&](std::ostream& out) {
    windows.each([&](const nlohmann::json& window, const WindowTree* tree) {
      if (tree) {
        print_window_tree(out, window, *tree);
        return;
      }
      for (const std::string& line : render::window_lines(window, *names, style)) out << line << "\n";
    });
  });
}

}  // namespace

CLI::App* setup_trace_show(CLI::App& trace, int& exit_status) {
  auto options = std::make_shared<TraceShowOptions>();
  CLI::App* command = trace.add_subcommand(
      "show", "print the windows of a saved trace (xref trace --json or --jsonl output); with --tree, each against "
              "the static callee tree of its start function: what was called, how often, and what was not");
  command->add_option("file", options->file, "the saved trace")->type_name("FILE")->required();
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
                      "the traced executable, for --tree and for names and source lines (default: the trace's "
                      "process.exe_path); its build-id and SHA-256 must match the trace's")
      ->type_name("FILE");
  command->add_flag("--addresses", options->addresses, "text: show each event's static VAs after its names");
  command->add_flag("--json", options->json, "print one JSON document (operation trace_show) instead of text");
  command->callback([options, &exit_status] { exit_status = run_trace_show(*options); });
  return command;
}

}  // namespace xref
