#include "fetch_spec.h"

#include <algorithm>
#include <array>

#include "identifier_chars.h"
#include "number_parse.h"
#include "parse_error_render.h"

namespace xref {
namespace {

constexpr std::string_view item_hint =
    "each fetch is NAME=ARG[:TYPE], e.g. amount=%r8:u64 or asset=+16(%dx):u64";
constexpr std::string_view register_hint =
    "registers: ax bx cx dx si di bp sp ip flags r8..r15, or rax rbx rcx rdx rsi rdi rbp rsp rip "
    "eflags";
constexpr std::string_view type_hint =
    "append :u64, :s32, :x64 and so on, :string or :string[N] for a string, or omit the type for u64";

// Field names the kernel's trace event format already uses; an argument
// named like one of them is refused when the uprobe event is created.
constexpr std::array<std::string_view, 9> reserved_names{
    "common_type", "common_flags",   "common_preempt_count", "common_pid",   "common_tgid",
    "__probe_ip",  "__probe_ret_ip", "__probe_func",         "__probe_type",
};

struct TypeName {
  std::string_view name;
  FetchType type;
};

constexpr std::array<TypeName, 12> type_names{{
    {"u8", {1, false, false}},
    {"u16", {2, false, false}},
    {"u32", {4, false, false}},
    {"u64", {8, false, false}},
    {"s8", {1, true, false}},
    {"s16", {2, true, false}},
    {"s32", {4, true, false}},
    {"s64", {8, true, false}},
    {"x8", {1, false, true}},
    {"x16", {2, false, true}},
    {"x32", {4, false, true}},
    {"x64", {8, false, true}},
}};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// Recursive descent over the whole spec, so every error knows its column.
class FetchSpecParser {
 public:
  explicit FetchSpecParser(std::string_view spec) : spec_(spec) {}

  Result<std::vector<FetchItem>> parse() {
    std::vector<FetchItem> items;
    skip_spaces();
    if (at_end()) return error_at(0, "empty fetch spec", item_hint);
    while (true) {
      skip_spaces();
      if (items.size() == fetch_max_items) {
        return error_at(position_,
                        "too many fetches: the limit is " + std::to_string(fetch_max_items),
                        "fetch fewer values per probe");
      }
      auto item = parse_item(items);
      if (!item) return item.error();
      items.push_back(std::move(*item));
      skip_spaces();
      if (at_end()) return items;
      if (peek() == ',') {
        ++position_;
        continue;
      }
      if (peek() == ')') {
        return error_here("unbalanced parenthesis: ')' without a matching '('",
                          "remove the ')' or add the '(' of a dereference such as +16(%dx)");
      }
      return error_here("expected ',' or the end of the spec but found " + quoted_character(peek()),
                        "separate fetches with ','");
    }
  }

 private:
  Result<FetchItem> parse_item(const std::vector<FetchItem>& earlier_items) {
    FetchItem item;
    const size_t name_start = position_;
    if (at_end() || peek() == ',') return error_here("expected a fetch name", item_hint);
    if (!is_identifier_start(peek())) {
      return error_here("expected a fetch name (a letter or '_') but found " + quoted_character(peek()),
                        item_hint);
    }
    while (!at_end() && is_identifier_char(peek())) ++position_;
    item.name = std::string(spec_.substr(name_start, position_ - name_start));

    if (item.name.size() > fetch_max_name_length) {
      return error_at(name_start,
                      "name '" + item.name + "' is longer than " +
                          std::to_string(fetch_max_name_length) + " characters",
                      "the kernel refuses longer argument names; pick a shorter one");
    }
    for (std::string_view reserved : reserved_names) {
      if (item.name == reserved) {
        return error_at(name_start,
                        "name '" + item.name + "' is reserved by the kernel's trace event format",
                        "pick another name");
      }
    }
    for (const FetchItem& earlier : earlier_items) {
      if (earlier.name == item.name) {
        return error_at(name_start, "duplicate name '" + item.name + "'",
                        "give each fetch its own name");
      }
    }
    const size_t arg_start = position_ + 1;

    if (at_end() || peek() != '=') {
      return error_here("expected '=' after the name '" + item.name + "'" + found_suffix(),
                        item_hint);
    }
    ++position_;

    if (auto status = parse_arg(item, 0); !status) return status.error();

    if (!at_end() && peek() == ':') {
      ++position_;
      auto type = parse_type();
      if (!type) return type.error();
      item.type = *type;
    }
    if (item.type.is_string()) {
      // As the kernel: the string's address is a dereference's, never a
      // register's own value.
      if (item.deref_offsets.empty()) {
        return error_at(arg_start, "a :string fetch needs a dereference: '" + item.name + "' reads a register",
                        "write the string's address as +0(%di) for the string di points at");
      }
      size_t strings = 1;
      for (const FetchItem& earlier : earlier_items) strings += earlier.type.is_string() ? 1 : 0;
      if (strings > fetch_max_strings) {
        return error_at(name_start, "too many :string fetches: the limit is " + std::to_string(fetch_max_strings),
                        "each record carries every string; fetch fewer strings per probe");
      }
    }
    return item;
  }

  // ARG := '%' REG | [+|-]OFFSET '(' ARG ')'. `depth` counts the
  // dereferences around this ARG; offsets are appended innermost first
  // because the recursion finishes the inner ARG before this one's offset.
  Result<void> parse_arg(FetchItem& item, size_t depth) {
    if (at_end()) {
      return error_here("expected a register such as %r8 or a dereference such as +16(%dx)",
                        item_hint);
    }
    if (peek() == '%') return parse_register(item);

    const size_t offset_start = position_;
    if (peek() != '+' && peek() != '-' && !(peek() >= '0' && peek() <= '9')) {
      return error_here(
          "expected a register such as %r8 or a dereference such as +16(%dx) but found " +
              quoted_character(peek()),
          item_hint);
    }
    if (depth == fetch_max_derefs) {
      return error_at(
          offset_start,
          "too many nested dereferences: the limit is " + std::to_string(fetch_max_derefs),
          "the BPF program follows at most " + std::to_string(fetch_max_derefs) +
              " pointers per fetch");
    }
    auto offset = parse_offset();
    if (!offset) return offset.error();

    const size_t open_paren = position_;
    if (at_end() || peek() != '(') {
      return error_here("expected '(' after the offset" + found_suffix(),
                        "write a dereference as +16(%dx)");
    }
    ++position_;
    if (auto inner = parse_arg(item, depth + 1); !inner) return inner.error();
    if (at_end() || peek() != ')') {
      return error_here("unbalanced parenthesis: expected ')' to close the '(' at column " +
                            std::to_string(open_paren + 1) + found_suffix(),
                        "close every '(' of a dereference, e.g. +8(+16(%di))");
    }
    ++position_;
    item.deref_offsets.push_back(*offset);
    return {};
  }

  Result<void> parse_register(FetchItem& item) {
    const size_t percent = position_;
    ++position_;
    const size_t name_start = position_;
    while (!at_end() && is_identifier_char(peek())) ++position_;
    const std::string_view name = spec_.substr(name_start, position_ - name_start);
    if (name.empty()) {
      return error_at(name_start, "expected a register name after '%'", register_hint);
    }
    const auto reg = register_from_name(name);
    if (!reg) {
      return error_at(percent, "unknown register '%" + std::string(name) + "'", register_hint);
    }
    item.base = *reg;
    return {};
  }

  // [+|-]DIGITS, decimal or 0x hex; no sign means '+'. The kernel keeps
  // dereference offsets in an int, so they must fit in 32 bits.
  Result<int32_t> parse_offset() {
    const size_t start = position_;
    const bool negative = peek() == '-';
    if (peek() == '+' || peek() == '-') ++position_;
    const size_t digits_start = position_;
    while (!at_end() && is_identifier_char(peek())) ++position_;
    const std::string_view digits = spec_.substr(digits_start, position_ - digits_start);
    if (digits.empty()) {
      return error_at(digits_start, std::string("expected an offset after '") + spec_[start] + "'",
                      "write a dereference as +16(%dx) or -0x10(%bp)");
    }
    auto magnitude = parse_u64(digits, "offset", static_cast<int>(digits_start) + 1);
    if (!magnitude) return magnitude.error();
    const uint64_t limit = negative ? uint64_t{1} << 31 : (uint64_t{1} << 31) - 1;
    if (*magnitude > limit) {
      return error_at(
          start,
          "offset '" + std::string(spec_.substr(start, position_ - start)) +
              "' does not fit in 32 bits",
          "the kernel keeps dereference offsets in 32 bits; use an offset within +-2^31");
    }
    const int64_t value =
        negative ? -static_cast<int64_t>(*magnitude) : static_cast<int64_t>(*magnitude);
    return static_cast<int32_t>(value);
  }

  Result<FetchType> parse_type() {
    const size_t start = position_;
    while (!at_end() && is_identifier_char(peek())) ++position_;
    const std::string_view name = spec_.substr(start, position_ - start);
    if (name.empty()) {
      return error_at(start, "expected a type after ':'" + found_suffix(), type_hint);
    }
    if (name == "string") return parse_string_bound();
    for (const TypeName& entry : type_names) {
      if (entry.name == name) return entry.type;
    }
    return error_at(start,
                    "unknown type '" + std::string(name) + "'; use u8..u64, s8..s64, x8..x64 or string",
                    type_hint);
  }

  // After "string": an optional "[N]", 1 <= N <= fetch_string_max_bytes.
  Result<FetchType> parse_string_bound() {
    FetchType type;
    type.width_bytes = 0;
    type.string_bound = static_cast<uint16_t>(fetch_string_default_bytes);
    if (at_end() || peek() != '[') return type;
    const size_t open = position_;
    ++position_;
    const size_t digits_start = position_;
    while (!at_end() && is_identifier_char(peek())) ++position_;
    const std::string_view digits = spec_.substr(digits_start, position_ - digits_start);
    const std::string bound_hint = "write :string[N] with 1 <= N <= " + std::to_string(fetch_string_max_bytes) +
                                   ": each record carries 4 string slots of that size";
    if (digits.empty()) return error_at(digits_start, "expected a byte count after 'string['" + found_suffix(), bound_hint);
    auto bound = parse_u64(digits, "string bound", static_cast<int>(digits_start) + 1);
    if (!bound) return bound.error();
    if (*bound == 0 || *bound > fetch_string_max_bytes) {
      return error_at(digits_start, "string bound " + std::string(digits) + " is out of range", bound_hint);
    }
    if (at_end() || peek() != ']') {
      return error_here("expected ']' to close the '[' at column " + std::to_string(open + 1) + found_suffix(),
                        bound_hint);
    }
    ++position_;
    type.string_bound = static_cast<uint16_t>(*bound);
    return type;
  }

  bool at_end() const { return position_ >= spec_.size(); }
  char peek() const { return spec_[position_]; }
  void skip_spaces() {
    while (!at_end() && is_blank(peek())) ++position_;
  }

  std::string found_suffix() const {
    return at_end() ? " but the spec ended" : " but found " + quoted_character(peek());
  }

  Error error_at(size_t index, std::string message, std::string_view hint) const {
    Error error = make_error(ErrorCode::invalid_argument, std::move(message), std::string(hint));
    error.column = static_cast<int>(index) + 1;
    return error;
  }
  Error error_here(std::string message, std::string_view hint) const {
    return error_at(position_, std::move(message), hint);
  }

  std::string_view spec_;
  size_t position_ = 0;
};

}  // namespace

std::string fetch_type_name(FetchType type) {
  if (type.is_string()) return "string[" + std::to_string(type.string_bound) + "]";
  const char letter = type.hex ? 'x' : (type.is_signed ? 's' : 'u');
  return letter + std::to_string(type.width_bytes * 8);
}

Result<std::vector<FetchItem>> parse_fetch_spec(std::string_view spec) {
  return FetchSpecParser(spec).parse();
}

namespace {

// Always signed: the kernel requires the sign the spec lets users omit.
std::string offset_text(int32_t offset) {
  // Widened first: -INT32_MIN does not fit in an int32_t.
  const int64_t wide = offset;
  return (wide < 0 ? "-" : "+") + std::to_string(wide < 0 ? -wide : wide);
}

}  // namespace

std::string kernel_fetch_type_name(FetchType type) {
  return type.is_string() ? "string" : fetch_type_name(type);
}

namespace {

std::string item_text(const FetchItem& item, const std::string& type_name) {
  std::string arg = "%" + std::string(register_kernel_name(item.base));
  for (int32_t offset : item.deref_offsets) arg = offset_text(offset) + "(" + arg + ")";
  return item.name + "=" + arg + ":" + type_name;
}

}  // namespace

std::string to_string(const FetchItem& item) { return item_text(item, fetch_type_name(item.type)); }

std::string to_string(std::span<const FetchItem> items) {
  std::string joined;
  for (const FetchItem& item : items) joined += (joined.empty() ? "" : ",") + to_string(item);
  return joined;
}

std::string tracefs_fetch_args(std::span<const FetchItem> items) {
  std::string joined;
  for (const FetchItem& item : items) {
    joined += (joined.empty() ? "" : " ") + item_text(item, kernel_fetch_type_name(item.type));
  }
  return joined;
}

std::vector<int> fetch_string_slots(std::span<const FetchItem> items) {
  std::vector<int> slots;
  int next = 0;
  for (const FetchItem& item : items) slots.push_back(item.type.is_string() ? next++ : -1);
  return slots;
}

std::vector<xref_fetch> compile_fetches(std::span<const FetchItem> items) {
  std::vector<xref_fetch> compiled;
  const std::vector<int> slots = fetch_string_slots(items);
  for (size_t i = 0; i < items.size(); ++i) {
    compiled.push_back(compile_fetch(items[i], static_cast<uint8_t>(slots[i] < 0 ? 0 : slots[i])));
  }
  return compiled;
}

xref_fetch compile_fetch(const FetchItem& item, uint8_t string_slot) {
  xref_fetch compiled{};
  compiled.regs_offset = register_pt_regs_offset(item.base);
  // parse_fetch_spec bounds the nesting; the clamp keeps a hand-built item
  // from sending the BPF program past its array.
  const size_t deref_count = std::min(item.deref_offsets.size(), fetch_max_derefs);
  compiled.deref_count = static_cast<__u8>(deref_count);
  compiled.width = item.type.width_bytes;
  compiled.is_signed = item.type.is_signed ? 1 : 0;
  if (item.index) {
    compiled.index_word_plus_one = static_cast<__u8>(register_pt_regs_offset(*item.index) / 8 + 1);
    compiled.index_scale = item.scale;
  }
  for (size_t i = 0; i < deref_count; ++i) {
    compiled.deref_offsets[i] = item.deref_offsets[i];
  }
  if (item.type.is_string() && string_slot < fetch_max_strings) {
    compiled.width = 0;
    compiled.is_signed = 0;
    compiled.string_slot = static_cast<__u8>(string_slot + 1);
    compiled.string_bound = static_cast<__u16>(std::min<size_t>(item.type.string_bound, fetch_string_max_bytes));
  }
  return compiled;
}

uint64_t extend_fetched_value(uint64_t raw, FetchType type) {
  if (type.is_string()) return raw;
  if (type.width_bytes == 0) return 0;
  if (type.width_bytes >= 8) return raw;
  const unsigned bits = type.width_bytes * 8u;
  const uint64_t low = raw & ((uint64_t{1} << bits) - 1);
  const uint64_t sign_bit = uint64_t{1} << (bits - 1);
  if (type.is_signed && (low & sign_bit) != 0) return low | ~((uint64_t{1} << bits) - 1);
  return low;
}

}  // namespace xref
