// Which instruction wrote, given a debug-register trap's pc. A data
// breakpoint traps after the access, so the pc is the next instruction to
// run: the writer is the instruction that ends at the pc, found by decoding
// the function from its start (a linear sweep, shared/disassembly.h), never
// by decoding backwards, which x86's variable lengths make a guess.
//
// When it cannot say: the pc starts a function (the writer was the call that
// pushed its return address, from anywhere); the pc is not the end of an
// instruction (the sweep disagrees with the trap); the instruction before it
// writes no memory and the pc is a branch target (the trap came through a
// jump, and jumps write nothing: "ambiguous"). A rep movs/stos traps after
// each iteration that touched the range with the pc still on itself while
// iterations remain: then the writer is the instruction at the pc.
#pragma once

#include <cstdint>
#include <string>

#include "elf_image.h"

namespace xref {

enum class TrapWriterStatus : uint8_t {
  found,            // `va`, `size`, `text` name the writer
  function_start,   // the pc starts a function: a call wrote (its return address)
  ambiguous,        // the instruction before writes nothing and the pc is a branch target
  not_a_store,      // the instruction before writes nothing and nothing branches to the pc
  not_a_boundary,   // no decoded instruction ends at the pc
  no_function,      // no function contains the pc
  undecodable,      // the function could not be disassembled
};

const char* trap_writer_status_name(TrapWriterStatus status);

struct TrapWriter {
  TrapWriterStatus status = TrapWriterStatus::no_function;
  uint64_t va = 0;          // static VA of the writer (found), or of the instruction before the pc (ambiguous, not_a_store)
  uint8_t size = 0;
  std::string text;         // Intel syntax
  std::string function;     // as the image names it (mangled)
  uint64_t function_start = 0;
  std::string why;          // status != found: one line for the output
};

// The writer of the trap at static VA `pc` of `image`.
TrapWriter trap_writer(const ElfImage& image, uint64_t pc);

}  // namespace xref
