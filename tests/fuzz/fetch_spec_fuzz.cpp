// --fetch, --fetch-at and --fetch-ret specs: the input is the spec text.
// A spec that parses must print back (to_string) to text that parses to
// the same items; one that does not must say where, in one line.
#include "fetch_spec.h"
#include "fuzz_support.h"

using namespace xref;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view spec = fuzz::as_text(data, size);
  auto items = parse_fetch_spec(spec);
  if (!items) {
    fuzz::require_parse_error(items.error(), spec);
    return 0;
  }
  fuzz::require(!items->empty() && items->size() <= fetch_max_items, "a parsed spec has no items or too many");
  const std::string canonical = to_string(*items);
  auto again = parse_fetch_spec(canonical);
  fuzz::require(again.ok(), "the canonical text of a parsed spec does not parse", canonical);
  fuzz::require(*again == *items, "the canonical text parses to other items", canonical);
  for (const FetchItem& item : *items) {
    fuzz::require(item.deref_offsets.size() <= fetch_max_derefs, "more dereferences than the limit");
    const xref_fetch compiled = compile_fetch(item);
    (void)compiled;
    (void)extend_fetched_value(~uint64_t{0}, item.type);
  }
  (void)tracefs_fetch_args(*items);
  return 0;
}
