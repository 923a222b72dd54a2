// /proc/PID/maps text, which a target can fill with hostile paths: parsed,
// then grouped into modules and asked about the addresses it maps, as
// `xref maps` and address resolution do. Module files are looked up as the
// fuzzer's own (/proc/self/root + path), so real files are opened when the
// text names them.
#include <unistd.h>

#include "address_space.h"
#include "fuzz_support.h"
#include "proc_maps.h"

using namespace xref;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto maps = parse_maps(fuzz::as_text(data, size));
  if (!maps) {
    fuzz::require_one_line_error(maps.error());
    return 0;
  }
  for (const MapEntry& entry : *maps) {
    fuzz::require(entry.start < entry.end, "a parsed mapping is empty");
    (void)entry.label();
    (void)entry.unescaped_path();
    if (const MapEntry* found = find_mapping(*maps, entry.start)) {
      fuzz::require(found->contains(entry.start), "find_mapping gave a mapping without the address");
    }
  }
  if (maps->empty()) return 0;
  const MapEntry first = maps->front();
  const AddressSpace space =
      AddressSpace::from_maps(std::move(*maps), getpid(), first.dev_major, first.dev_minor, first.inode);
  (void)space.main_module();
  for (const Module& module : space.modules()) {
    if (module.path.empty()) continue;
    fuzz::require(space.find_module(module.path) != nullptr, "a module is not found by its own path", module.path);
  }
  size_t resolved = 0;
  for (const MapEntry& entry : space.maps()) {
    if (++resolved > 8) break;
    const LiveAddress live = space.resolve_live(entry.start);
    for (const StaticCandidate& candidate : live.candidates) {
      (void)space.live_from_static(*candidate.module, candidate.static_va);
    }
  }
  return 0;
}
