#include "watch/trap_writers.h"

#include "hex.h"
#include "process_identity.h"

namespace xref {

bool TrapWriters::read_space() {
  auto process = ProcessHandle::open(pid_);
  if (!process) return false;
  auto space = AddressSpace::read(*process);
  if (!space) return false;
  space_ = std::move(*space);
  return true;
}

void TrapWriters::read_address_space() {
  if (!read_space()) return;
  // The executable's image too (it is read through the live process): the
  // writers the tests and most users watch are in it.
  for (const Module& module : space_->modules()) {
    if (module.main_executable) (void)space_->image(module);
  }
}

std::optional<TrapWriter> TrapWriters::resolve(uint64_t pc) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!space_ || attempt == 1) {
      if (attempt == 1 && space_reread_) return std::nullopt;
      if (attempt == 1) space_reread_ = true;
      if (!read_space()) return std::nullopt;
    }
    const LiveAddress live = space_->resolve_live(pc);
    if (live.candidates.empty() || live.candidates.front().module == nullptr) continue;
    const StaticCandidate& candidate = live.candidates.front();
    auto image = space_->image(*candidate.module);
    if (!image) return std::nullopt;
    TrapWriter writer = trap_writer(**image, candidate.static_va);
    // Live and static differ by the mapping's bias alone: the writer lies
    // in the same mapping, right before the pc (or at it).
    writer.va = pc - (candidate.static_va - writer.va);
    writer.function_start = pc - (candidate.static_va - writer.function_start);
    return writer;
  }
  return std::nullopt;
}

uint64_t TrapWriters::writer_of(uint64_t pc, std::string* text) {
  auto known = writers_.find(pc);
  if (known == writers_.end()) {
    const std::optional<TrapWriter> writer = resolve(pc);
    Known found;
    if (writer && writer->status == TrapWriterStatus::found) {
      found.writer = writer->va;
      found.text = writer->text;
    } else {
      Unknown& unknown = unknown_[pc];
      if (writer) {
        unknown.writer = *writer;
      } else {
        unknown.writer.status = TrapWriterStatus::no_function;
        unknown.writer.why = "the trap pc lies in no module xref can read";
      }
    }
    known = writers_.emplace(pc, std::move(found)).first;
  }
  if (known->second.writer == 0) ++unknown_[pc].traps;
  if (text != nullptr) *text = known->second.text;
  return known->second.writer;
}

std::vector<std::string> TrapWriters::warnings() const {
  std::vector<std::string> warnings;
  for (const auto& [pc, unknown] : unknown_) {
    std::string where = to_hex(pc);
    if (!unknown.writer.function.empty()) {
      where += " (" + unknown.writer.function + "+" + to_hex(pc - unknown.writer.function_start) + ")";
    }
    warnings.push_back(std::to_string(unknown.traps) + (unknown.traps == 1 ? " trap at " : " traps at ") + where +
                       ": writer unknown, " + unknown.writer.why);
  }
  return warnings;
}

}  // namespace xref
