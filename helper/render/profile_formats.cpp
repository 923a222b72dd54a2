#include "render/profile_formats.h"

namespace xref::render {
namespace {

Error not_yet(const char* format) {
  return make_error(ErrorCode::unsupported, std::string("--format ") + format + " is not built yet");
}

}  // namespace

Result<std::string> profile_folded(const Profile&) { return not_yet("folded"); }
Result<std::string> profile_svg(const Profile&, const std::string&) { return not_yet("svg"); }
Result<std::string> profile_pprof(const Profile&) { return not_yet("pprof"); }

}  // namespace xref::render
