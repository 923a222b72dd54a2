// Readable text of the helper's one-shot JSON documents (docs/json.md):
// live_maps, live_resolve, doctor. Others print as indented JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace xref::lldb_plugin {

std::vector<std::string> render_document(const nlohmann::json& document);

// "message (column N); hint" of the document's error, "" when none.
std::string document_error(const nlohmann::json& document);

}  // namespace xref::lldb_plugin
