// A fixture binary as the code tests read it: xref's ElfImage of it beside
// the ground truth from outside xref, objdump's instruction listing and
// nm's symbols, with a function's lines and its disassembly by name.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "disassembly.h"
#include "elf_image.h"
#include "objdump_listing.h"

namespace xref::test {

class FixtureCode {
 public:
  // `name` is a binary of tests/fixtures ("calls_pie").
  explicit FixtureCode(const std::string& name)
      : path_(fixture_path(name)), image_(open(path_)), listing_(path_), symbols_(nm_symbols(path_)) {}

  const std::string& path() const { return path_; }
  const ElfImage& image() const { return image_; }
  const ObjdumpListing& listing() const { return listing_; }
  const std::vector<NmSymbol>& symbols() const { return symbols_; }
  NmSymbol symbol(const std::string& name) const { return nm_symbol(symbols_, name); }

  // objdump's instruction lines of the function nm sizes as `name`.
  std::vector<ObjdumpInstruction> lines_of(const std::string& name) const {
    const NmSymbol function = symbol(name);
    return listing_.in_range(function.start, function.start + function.size);
  }

  // xref's disassembly of the function at nm's address of `name`, in `image`
  // (this fixture's own by default).
  FunctionCode code_of(const std::string& name) const { return code_of(image_, name); }
  FunctionCode code_of(const ElfImage& image, const std::string& name) const {
    const FunctionSymbol* function = image.function_at(symbol(name).start);
    if (function == nullptr) throw std::runtime_error("ElfImage lacks " + name);
    auto code = disassemble(image, *function);
    if (!code) throw std::runtime_error(code.error().message);
    return std::move(code).value();
  }

 private:
  static ElfImage open(const std::string& path) {
    auto image = ElfImage::open(path);
    if (!image) throw std::runtime_error(path + ": " + image.error().message);
    return std::move(image).value();
  }

  std::string path_;
  ElfImage image_;
  ObjdumpListing listing_;
  std::vector<NmSymbol> symbols_;
};

}  // namespace xref::test
