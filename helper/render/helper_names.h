// The helper's own Names: function and offset from the module's ELF symbols
// (elf_image.h: .symtab, .dynsym, a separate debug file's), file:line from
// its DWARF line table (process/module_lines in a live process). Each module
// is opened once, each address named once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "address_space.h"
#include "elf_image.h"
#include "process/module_lines.h"
#include "render/names.h"
#include "source_lines.h"

namespace xref::render {

class HelperNames final : public Names {
 public:
  // The modules of a live process: its executable as the space opened it
  // (--bin included), its libraries by name.
  explicit HelperNames(const AddressSpace& space);
  // One executable's file alone (a saved trace): other modules are not named.
  explicit HelperNames(std::shared_ptr<const ElfImage> executable);
  ~HelperNames() override;

  std::optional<Place> place(const CodeAddress& address) override;

 private:
  struct Module;
  Module* module(const std::string& name);
  std::optional<Place> name(const std::string& module, uint64_t static_va);
  std::optional<std::pair<std::string, uint64_t>> static_of(const CodeAddress& address) const;
  std::optional<SourceLine> line_at(Module& module, uint64_t static_va);

  const AddressSpace* space_ = nullptr;
  std::string executable_name_;  // the executable's file name, when named by file alone
  std::map<std::string, std::unique_ptr<Module>> modules_;  // by name, "" the executable
  std::map<std::pair<std::string, uint64_t>, std::optional<Place>> places_;
  ModuleLines module_lines_;  // a live process's modules' lines, each opened once
};

}  // namespace xref::render
