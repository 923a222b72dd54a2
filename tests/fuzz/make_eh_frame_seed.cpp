// Writes the unwind sections of an ELF image in the eh_frame fuzz target's
// input layout (eh_frame_fuzz.cpp):
//   u64 .eh_frame VA | u64 .eh_frame_hdr VA | u16 .eh_frame_hdr size | .eh_frame_hdr | .eh_frame
// make_eh_frame_seed ELF OUT
#include <cstdio>
#include <fstream>

#include "elf_image.h"

namespace {

template <typename T>
void put(std::ofstream& out, T value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

void put(std::ofstream& out, std::span<const uint8_t> bytes) {
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_eh_frame_seed ELF OUT\n");
    return 2;
  }
  auto image = xref::ElfImage::open(argv[1]);
  if (!image) {
    std::fprintf(stderr, "make_eh_frame_seed: %s\n", image.error().message.c_str());
    return 1;
  }
  const xref::SectionInfo* eh_frame = image->section(".eh_frame");
  const xref::SectionInfo* hdr = image->section(".eh_frame_hdr");
  if (eh_frame == nullptr || hdr == nullptr || hdr->size > UINT16_MAX) {
    std::fprintf(stderr, "make_eh_frame_seed: %s has no .eh_frame, or no small .eh_frame_hdr\n", argv[1]);
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  put<uint64_t>(out, eh_frame->addr);
  put<uint64_t>(out, hdr->addr);
  put<uint16_t>(out, static_cast<uint16_t>(hdr->size));
  put(out, image->section_bytes(*hdr));
  put(out, image->section_bytes(*eh_frame));
  return out.good() ? 0 : 1;
}
