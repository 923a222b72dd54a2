// The writer of each hw trap of one process, by live trap pc: the module
// and static VA through the process's address space, the instruction
// before the pc decoded from its function's start (sites/trap_writer.h),
// each pc once. A trap whose writer cannot be told is kept for a warning.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "address_space.h"
#include "sites/trap_writer.h"

namespace xref {

class TrapWriters {
 public:
  explicit TrapWriters(pid_t pid) : pid_(pid) {}
  // Reads the process's mappings now, at arming: a trap drained after the
  // process exited is then still placed in its module.
  void read_address_space();
  // The writer's live address; 0 when it cannot be told. `text`: its
  // Intel text.
  uint64_t writer_of(uint64_t pc, std::string* text = nullptr);
  // "3 traps at 0x55d0c0a01234 (worker+0x40): the instruction before the
  // trap pc writes no memory and the pc is a branch target"
  std::vector<std::string> warnings() const;

 private:
  bool read_space();  // the mappings, from the live process; false when it cannot be read
  std::optional<TrapWriter> resolve(uint64_t pc);

  pid_t pid_;
  std::optional<AddressSpace> space_;
  bool space_reread_ = false;  // once, for code mapped after the start (dlopen)
  struct Known {
    uint64_t writer = 0;  // live; 0: unknown
    std::string text;
  };
  std::unordered_map<uint64_t, Known> writers_;  // by live trap pc
  struct Unknown {
    TrapWriter writer;
    uint64_t traps = 0;
  };
  std::map<uint64_t, Unknown> unknown_;  // live pc -> why
};

}  // namespace xref
