#include "input/untrusted_json.h"

namespace xref {
namespace {

// nlohmann's own DOM builder, stopped (a SAX handler returning false ends
// the parse) at the first array or object one level too deep.
class DepthLimitedBuilder : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
  using Builder = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;

 public:
  DepthLimitedBuilder(nlohmann::json& result, size_t max_depth) : Builder(result, false), max_depth_(max_depth) {}

  bool start_object(std::size_t elements) { return enter() && Builder::start_object(elements); }
  bool start_array(std::size_t elements) { return enter() && Builder::start_array(elements); }
  bool end_object() {
    --depth_;
    return Builder::end_object();
  }
  bool end_array() {
    --depth_;
    return Builder::end_array();
  }
  bool too_deep() const { return too_deep_; }

 private:
  bool enter() {
    if (++depth_ <= max_depth_) return true;
    too_deep_ = true;
    return false;
  }

  size_t max_depth_;
  size_t depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

UntrustedJson parse_untrusted_json(std::string_view text, size_t max_depth) {
  UntrustedJson parsed;
  nlohmann::json value;
  DepthLimitedBuilder builder(value, max_depth);
  if (nlohmann::json::sax_parse(text, &builder, nlohmann::json::input_format_t::json, true)) {
    parsed.value = std::move(value);
  } else {
    parsed.failure = builder.too_deep() ? UntrustedJson::Failure::too_deep : UntrustedJson::Failure::syntax;
  }
  return parsed;
}

std::string too_deep_text(size_t max_depth) {
  return "nested deeper than " + std::to_string(max_depth) + " levels";
}

}  // namespace xref
