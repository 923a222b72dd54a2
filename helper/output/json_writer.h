// JSON written straight into a reusable buffer, for output that goes out
// per event (trace windows; probe, watch and profile records after it):
// no value tree is built, nothing is allocated once the buffer has grown.
// It writes what json_text() (json_envelope.h) would for the same value,
// byte for byte, provided keys are given in sorted order, as nlohmann's
// objects keep them: readers and `trace diff` see one spelling either way.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xref {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // `name` is written as given: a plain ASCII key, no escaping needed.
  JsonWriter& key(std::string_view name);
  // The same for a literal, quoted and written in one piece.
  template <size_t N>
  JsonWriter& key(const char (&name)[N]) {
    static_assert(N < 64, "a key is short");
    char quoted[N + 3];
    quoted[0] = need_comma_ ? ',' : '"';
    size_t at = 1;
    if (need_comma_) quoted[at++] = '"';
    for (size_t i = 0; i + 1 < N; ++i) quoted[at++] = name[i];
    quoted[at++] = '"';
    quoted[at++] = ':';
    out_.append(quoted, at);
    need_comma_ = false;
    return *this;
  }

  JsonWriter& string(std::string_view value);
  // "0x1c20": how xref spells 64-bit values in JSON.
  JsonWriter& hex(uint64_t value);
  JsonWriter& number(uint64_t value);
  JsonWriter& signed_number(int64_t value);
  JsonWriter& boolean(bool value);
  JsonWriter& null();
  // A value already in JSON (a cached, escaped string, or an object).
  JsonWriter& raw(std::string_view json);

  std::string& buffer() { return out_; }

 private:
  void separate() {
    if (need_comma_) out_ += ',';
    need_comma_ = true;
  }

  std::string& out_;
  bool need_comma_ = false;
};

// `value` as a JSON string, with quotes, appended to `out`: escapes as
// json_text() does; bytes that are not UTF-8 become U+FFFD.
void append_json_string(std::string& out, std::string_view value);
std::string json_string(std::string_view value);

void append_decimal(std::string& out, uint64_t value);
void append_signed_decimal(std::string& out, int64_t value);

}  // namespace xref
