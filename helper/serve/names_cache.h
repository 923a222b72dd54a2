// The debugger's names of live addresses (protocol 2's `names` request),
// kept per process so each address is asked of the debugger once; the text
// the helper writes in a debugger uses the debugger's spellings, and the
// helper's own names where the debugger knows none.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "render/names.h"
#include "serve/protocol.h"

namespace xref::serve {

class NamesCache {
 public:
  // Beyond this many names per process the cache starts over (a front end
  // asks again for what the next text needs).
  static constexpr size_t kKeptPerProcess = 65536;
  static constexpr size_t kKeptProcesses = 16;

  // The helper's own names for a process (ELF symbols, DWARF lines); null when it cannot open it.
  using HelperNames = std::function<std::unique_ptr<render::Names>(pid_t pid)>;
  explicit NamesCache(HelperNames helper_names = {}) : helper_names_(std::move(helper_names)) {}

  // `names` request params: {pid, names: [{address, function, offset, file, line} | {address, unknown: true}]}.
  std::optional<ProtocolError> add(const nlohmann::json& params);
  // Whether the front end said anything about `live` in process `pid`.
  bool has(pid_t pid, uint64_t live) const;
  // Names for one process: the debugger's where it named the address, else
  // the helper's own. `debugger` false: the helper's own only.
  std::unique_ptr<render::Names> names_for(pid_t pid, bool debugger = true);

 private:
  // live address -> the debugger's place, nullopt when it knows none
  using Places = std::map<uint64_t, std::optional<render::Place>>;
  mutable std::mutex mutex_;
  // Per process, an immutable snapshot: `add` makes the next one (copy on
  // write, once per batch the front end sends), so names_for hands out the
  // current one to every text rendered, on any thread, without copying it.
  std::map<pid_t, std::shared_ptr<const Places>> places_;
  HelperNames helper_names_;
  // The helper's own names per process, made once: they still name the
  // addresses of a process that exited (its modules were read while it ran).
  std::map<pid_t, std::shared_ptr<render::Names>> helper_by_pid_;
};

}  // namespace xref::serve
