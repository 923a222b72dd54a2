#include "watch/site_place.h"

#include "sites/probe_site_check.h"

namespace xref {

bool evex_at(const ElfImage& image, uint64_t va) {
  const auto bytes = image.bytes_at(va, 16);
  if (!bytes) return true;
  for (uint8_t byte : *bytes) {
    if (byte == 0x66 || byte == 0x67 || byte == 0xf2 || byte == 0xf3 || byte == 0x2e || byte == 0x3e ||
        byte == 0x26 || byte == 0x36 || byte == 0x64 || byte == 0x65 || byte == 0xf0) {
      continue;
    }
    return byte == 0x62;
  }
  return true;
}

std::optional<WatchSite> placed_site(const ElfImage& image, uint32_t module, uint64_t bias, uint64_t va) {
  auto offset = image.file_offset_of(va);
  if (!offset || evex_at(image, va) || kernel_refuses_uprobe(image, va)) return std::nullopt;
  WatchSite site;
  site.module = module;
  site.static_va = va;
  site.live_va = va + bias;
  site.file_offset = *offset;
  return site;
}

}  // namespace xref
