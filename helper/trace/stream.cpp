#include "trace/stream.h"

#include <sstream>

#include "output/json_envelope.h"

namespace xref {

void TraceStream::attached(const std::string& backend, const nlohmann::json& process) {
  switch (format_) {
    case TraceFormat::text: {
      std::ostringstream header;
      renderer_.print_header(header, backend);
      output_.push(header.str(), false);
      return;
    }
    case TraceFormat::jsonl:
      // The process identity first, so a stream cut short still says which
      // build it traced (trace diff compares only windows of one build).
      output_.push(json_text({{"type", "header"},
                              {"schema_version", kSchemaVersion},
                              {"tool", "xref"},
                              {"tool_version", XREF_VERSION},
                              {"operation", "live_trace"},
                              {"backend", backend},
                              {"process", process}}) +
                       "\n",
                   false);
      return;
    case TraceFormat::json: {
      // The members known now, then the windows as they close.
      std::string head = json_text(renderer_.document_head(backend));
      head.back() = ',';
      head += "\"windows\":[";
      output_.push(std::move(head), false);
      document_open_ = true;
      return;
    }
  }
}

void TraceStream::write_window(const TraceWindow& window, const TraceRun* run, bool droppable) {
  // Text leaves out a window with no event left; JSON shows it, empty.
  if (format_ == TraceFormat::text && window.events.empty()) {
    ++not_shown_["all_events_lost"];
    return;
  }
  std::string piece;
  switch (format_) {
    case TraceFormat::text:
      renderer_.append_text(piece, window, run);
      break;
    case TraceFormat::jsonl:
      renderer_.append_jsonl_window(piece, window, run);
      break;
    case TraceFormat::json:
      // An element of the document's array, after a comma when one went before.
      if (window_written_) piece += ',';
      renderer_.windows().append_json(piece, window, run);
      break;
  }
  if (output_.push(std::move(piece), droppable)) {
    window_written_ = true;
  } else if (droppable) {
    ++not_shown_["output_stalled"];
  }
}

void TraceStream::window_closed(const TraceWindow& window) { write_window(window, nullptr, true); }

std::string TraceStream::document_end(const nlohmann::json& members) {
  // "windows" sorts after every other member, but the ones after it are
  // only known now: written after the array all the same (members are
  // unordered; readers look them up by name).
  std::string end = json_text(members);
  end.front() = ',';
  return "]" + end + "\n";
}

void TraceStream::finish(TraceRun& run, const std::optional<Error>& error) {
  for (const auto& [id, window] : run.windows->windows()) write_window(window, &run, false);
  run.windows_not_shown = not_shown_;
  switch (format_) {
    case TraceFormat::text: {
      std::ostringstream summary;
      renderer_.print_summary(summary, run);
      output_.push(summary.str(), false);
      return;
    }
    case TraceFormat::jsonl:
      output_.push(json_text({{"type", "summary"},
                              {"backend", run.backend},
                              {"process", renderer_.process_json_after()},
                              {"summary", renderer_.summary_json(run)}}) +
                       "\n",
                   false);
      return;
    case TraceFormat::json:
      output_.push(document_end(renderer_.document_tail(&run, error)), false);
      document_open_ = false;
      return;
  }
}

bool TraceStream::fail(const Error& error) {
  if (!document_open_) return false;
  output_.push(document_end(renderer_.document_tail(nullptr, error)), false);
  document_open_ = false;
  return true;
}

}  // namespace xref
