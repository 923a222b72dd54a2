// Opens a file in Debian's chromium, headless, as a person's browser would
// (scripts run): the DOM after the page's script ran (`--dump-dom`) and a
// screenshot. Each run has its own profile directory, so tests running at
// once do not share a browser.
#pragma once

#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <fstream>
#include <set>
#include <string>

#include "command_output.h"
#include "scratch_directory.h"

namespace xref::test {

inline bool chromium_present() { return access("/usr/bin/chromium", X_OK) == 0; }

inline std::string chromium_command(const ScratchDirectory& scratch) {
  return "/usr/bin/chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=" +
         scratch.path() + "/browser ";
}

// The document as chromium holds it after its scripts ran; `fragment` is
// the URL's part after '#'.
inline std::string chromium_dom(const ScratchDirectory& scratch, const std::string& file, const std::string& fragment) {
  return command_output(chromium_command(scratch) + "--dump-dom 'file://" + file + "#" + fragment + "' 2>/dev/null");
}

inline std::string chromium_screenshot(const ScratchDirectory& scratch, const std::string& file, int width,
                                       int height) {
  const std::string png = scratch.path() + "/screenshot.png";
  command_output(chromium_command(scratch) + "--screenshot=" + png + " --window-size=" + std::to_string(width) +
                 "," + std::to_string(height) + " 'file://" + file + "' >/dev/null 2>&1");
  std::ifstream in(png, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A PNG's width and height (IHDR), and how many distinct byte values its
// inflated pixel rows hold: a blank picture holds a handful, a drawn one many.
struct PngFacts {
  uint32_t width = 0, height = 0;
  size_t distinct_bytes = 0;
};

inline PngFacts png_facts(const std::string& png) {
  PngFacts facts;
  if (png.size() < 33 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return facts;
  auto be32 = [&](size_t at) {
    return static_cast<uint32_t>(static_cast<uint8_t>(png[at]) << 24 | static_cast<uint8_t>(png[at + 1]) << 16 |
                                 static_cast<uint8_t>(png[at + 2]) << 8 | static_cast<uint8_t>(png[at + 3]));
  };
  facts.width = be32(16);
  facts.height = be32(20);
  std::string compressed;
  for (size_t at = 8; at + 12 <= png.size();) {
    const uint32_t length = be32(at);
    if (png.compare(at + 4, 4, "IDAT") == 0) compressed += png.substr(at + 8, length);
    at += 12 + length;
  }
  std::string pixels(static_cast<size_t>(facts.width) * facts.height * 4 + facts.height, '\0');
  uLongf size = pixels.size();
  if (uncompress(reinterpret_cast<Bytef*>(pixels.data()), &size, reinterpret_cast<const Bytef*>(compressed.data()),
                 compressed.size()) != Z_OK) {
    return facts;
  }
  std::set<char> seen(pixels.begin(), pixels.begin() + static_cast<long>(size));
  facts.distinct_bytes = seen.size();
  return facts;
}

}  // namespace xref::test
