#include "trace/saved/document.h"

#include <memory>
#include <string>

namespace xref {
namespace {

using Json = nlohmann::json;
using Builder = nlohmann::detail::json_sax_dom_parser<Json>;

bool kept_member(const std::string& key) {
  return key == "operation" || key == "schema_version" || key == "process" || key == "summary";
}

// SAX events at three levels: the document object (level 1), its
// "windows" array (level 2), and inside one member or window value, which
// is built by nlohmann's own DOM builder (or skipped when not wanted).
class Walker {
 public:
  Walker(DocumentWalk& walk, const WantedWindow& wanted, const TakeWindow& take, size_t max_depth)
      : walk_(walk), wanted_(wanted), take_(take), max_depth_(max_depth) {}

  bool null() { return scalar([](Builder& b) { return b.null(); }); }
  bool boolean(bool value) { return scalar([&](Builder& b) { return b.boolean(value); }); }
  bool number_integer(Json::number_integer_t value) { return scalar([&](Builder& b) { return b.number_integer(value); }); }
  bool number_unsigned(Json::number_unsigned_t value) {
    return scalar([&](Builder& b) { return b.number_unsigned(value); });
  }
  bool number_float(Json::number_float_t value, const Json::string_t& text) {
    return scalar([&](Builder& b) { return b.number_float(value, text); });
  }
  bool string(Json::string_t& value) { return scalar([&](Builder& b) { return b.string(value); }); }
  bool binary(Json::binary_t& value) { return scalar([&](Builder& b) { return b.binary(value); }); }
  bool start_object(std::size_t elements) { return open(true, [&](Builder& b) { return b.start_object(elements); }); }
  bool start_array(std::size_t elements) { return open(false, [&](Builder& b) { return b.start_array(elements); }); }
  bool end_object() { return close([](Builder& b) { return b.end_object(); }); }
  bool end_array() { return close([](Builder& b) { return b.end_array(); }); }
  bool key(Json::string_t& name) {
    if (inside_) return !value_ || value_->builder.key(name);
    if (level_ == 1) {
      key_ = name;
      walk_.has_type |= name == "type";
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  struct Value {
    Json json;
    Builder builder{json, false};
  };

  // A value begins at the walker's own level: kept (built) or skipped.
  void begin_value() {
    const bool keep = level_ == 1 ? kept_member(key_) : wanted_(walk_.windows);
    if (keep) value_ = std::make_unique<Value>();
    inside_ = true;
  }

  bool end_value() {
    bool go_on = true;
    if (level_ == 1 && value_) {
      walk_.members[key_] = std::move(value_->json);
    } else if (level_ == 2) {
      const size_t index = walk_.windows++;
      if (value_) go_on = take_(index, std::move(value_->json));
      walk_.stopped = !go_on;
    }
    value_.reset();
    inside_ = false;
    return go_on;
  }

  template <typename Forward>
  bool scalar(Forward forward) {
    if (!inside_) {
      if (level_ == 0) return false;  // a document is an object
      begin_value();
      if (value_ && !forward(value_->builder)) return false;
      return end_value();
    }
    return !value_ || forward(value_->builder);
  }

  template <typename Forward>
  bool open(bool object, Forward forward) {
    if (static_cast<size_t>(level_) + nested_ + 1 > max_depth_) {
      walk_.too_deep = true;
      return false;
    }
    if (!inside_) {
      if (level_ == 0) {
        if (!object) return false;
        walk_.top_object = true;
        level_ = 1;
        return true;
      }
      if (level_ == 1 && key_ == "windows" && !object && !windows_entered_) {
        windows_entered_ = true;
        level_ = 2;
        return true;
      }
      begin_value();
    }
    ++nested_;
    return !value_ || forward(value_->builder);
  }

  template <typename Forward>
  bool close(Forward forward) {
    if (inside_) {
      if (value_ && !forward(value_->builder)) return false;
      return --nested_ > 0 || end_value();
    }
    --level_;
    return true;
  }

  DocumentWalk& walk_;
  const WantedWindow& wanted_;
  const TakeWindow& take_;
  size_t max_depth_;
  int level_ = 0;         // 1: in the document object, 2: in its "windows" array
  size_t nested_ = 0;     // levels opened inside the current value
  bool inside_ = false;   // a member or window value is being read
  bool windows_entered_ = false;
  std::string key_;       // the document member being read
  std::unique_ptr<Value> value_;  // the value being built; null while one is skipped
};

}  // namespace

DocumentWalk walk_trace_document(std::istream& input, const WantedWindow& wanted, const TakeWindow& take,
                                 size_t max_depth) {
  DocumentWalk walk;
  Walker walker(walk, wanted, take, max_depth);
  walk.complete = Json::sax_parse(input, &walker, Json::input_format_t::json, true);
  return walk;
}

}  // namespace xref
