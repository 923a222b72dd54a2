// The files a probe set puts probes in, each once, by index: [0] is the
// process's executable, then every shared library a probe names, in the
// order they were first needed. A probe's module index is its place here,
// and a BPF backend attaches one link per module.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "address_space.h"
#include "elf_image.h"
#include "process/target.h"
#include "result.h"

namespace xref {

struct ProbeModule {
  const Module* module = nullptr;
  std::shared_ptr<const ElfImage> image;
};

class ProbeModules {
 public:
  // The executable alone; an error when the process's mappings lack it or
  // its image cannot be read.
  static Result<ProbeModules> of_process(const Target& target);

  // The index of a module of the process, added on first use.
  uint32_t index_of(const Module* module, std::shared_ptr<const ElfImage> image);
  // The same for a module named by the user ("libc.so.6", a soname, a
  // path); `what` starts the error when the process has none by that name.
  Result<uint32_t> index_of_named(const std::string& name, const std::string& what);

  const ProbeModule& operator[](uint32_t index) const { return modules_[index]; }
  const ElfImage& image(uint32_t index) const { return *modules_[index].image; }
  const std::vector<ProbeModule>& all() const { return modules_; }
  const Target& target() const { return *target_; }

 private:
  explicit ProbeModules(const Target& target) : target_(&target) {}

  const Target* target_;
  std::vector<ProbeModule> modules_;
};

}  // namespace xref
