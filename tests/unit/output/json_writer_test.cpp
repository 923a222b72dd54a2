// JsonWriter against nlohmann's dump of the same value (what json_text()
// prints): byte for byte, for the strings a target can hand over (quotes,
// control characters, bytes that are not UTF-8) and for nesting.
#include "output/json_writer.h"

#include <gtest/gtest.h>

#include <limits>

#include "output/json_envelope.h"

namespace xref {
namespace {

TEST(JsonWriter, StringsAreEscapedAsJsonTextEscapesThem) {
  const std::string cases[] = {
      "",
      "plain",
      "svc::validate(unsigned long, unsigned long)",
      "quote \" and backslash \\",
      std::string("nul \0 inside", 12),
      "tab\tnewline\nreturn\rbell\x07 escape\x1b del\x7f",
      "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80",     // UTF-8 kept
      "bad \xff\xfe bytes \xc3",                      // not UTF-8: U+FFFD
      "overlong \xc0\xaf and surrogate \xed\xa0\x80",
  };
  for (const std::string& value : cases) {
    EXPECT_EQ(json_string(value), json_text(nlohmann::json(value))) << value;
  }
}

TEST(JsonWriter, ObjectsAndArraysAsJsonTextWritesThem) {
  std::string out;
  JsonWriter json(out);
  json.begin_object();
  json.key("a").begin_array().number(0).number(std::numeric_limits<uint64_t>::max()).end_array();
  json.key("b").signed_number(std::numeric_limits<int64_t>::min());
  json.key("c").begin_object().end_object();
  json.key("d").begin_array().end_array();
  json.key("e").boolean(false).key("f").null().key("g").hex(0x7ff3106f6a80).key("h").hex(0);
  json.key("i").begin_array().begin_object().key("x").string("y").end_object().begin_object().end_object().end_array();
  json.key("j").raw("{\"k\":[1,2]}");
  json.end_object();
  const nlohmann::json expected = {
      {"a", {0, std::numeric_limits<uint64_t>::max()}},
      {"b", std::numeric_limits<int64_t>::min()},
      {"c", nlohmann::json::object()},
      {"d", nlohmann::json::array()},
      {"e", false},
      {"f", nullptr},
      {"g", "0x7ff3106f6a80"},
      {"h", "0x0"},
      {"i", {{{"x", "y"}}, nlohmann::json::object()}},
      {"j", {{"k", {1, 2}}}},
  };
  EXPECT_EQ(out, json_text(expected));
}

TEST(JsonWriter, AppendsToWhatTheBufferHolds) {
  std::string out = "{\"type\":\"window\",\"window\":";
  JsonWriter json(out);
  json.begin_object().key("n").number(1).end_object();
  out += "}";
  EXPECT_EQ(out, json_text({{"type", "window"}, {"window", {{"n", 1}}}}));
}

}  // namespace
}  // namespace xref
