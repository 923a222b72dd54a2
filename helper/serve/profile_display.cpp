// A profile session's part of the display: nothing while it samples; once
// it ended (at the debugger's stop, its --duration, `xref stop`), the
// capture's summary as the CLI prints it and its hottest functions, each
// named as the debugger names the address where it took the most samples.
#include "render/profile_capture_text.h"
#include "render/profile_top_text.h"
#include "serve/display.h"

namespace xref::serve {

std::vector<uint64_t> Display::profile_addresses(const Session& kept, const Selection& selection) {
  if (!kept.ended || !kept.document.is_object() || (kept.document_shown && !selection.all)) return {};
  return render::profile_top_addresses(kept.document.value("top", nlohmann::json()));
}

void Display::show_profile(Session& kept, const Selection& selection, render::Names& names, Shown& shown) {
  if (!kept.ended || !kept.document.is_object() || (kept.document_shown && !selection.all)) return;
  const nlohmann::json data = kept.document.value("data", nlohmann::json());
  if (data.is_object()) {
    for (std::string& line : render::profile_capture_lines(kept.document.value("process", nlohmann::json()), data)) {
      shown.lines.push_back(std::move(line));
    }
  }
  const nlohmann::json top = kept.document.value("top", nlohmann::json());
  if (top.is_object()) {
    shown.lines.push_back("");
    for (std::string& line : render::profile_top_lines(top, names)) shown.lines.push_back(std::move(line));
  }
  for (const nlohmann::json& warning : kept.document.value("warnings", nlohmann::json::array())) {
    if (warning.is_string()) shown.lines.push_back("warning: " + warning.get<std::string>());
  }
  kept.document_shown = true;
}

}  // namespace xref::serve
