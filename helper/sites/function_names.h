// The names users give to functions, resolved to the code a probe goes in:
// "symbol", "0xSTATIC_VA", "module:symbol" and "module:0xSTATIC_VA". A GNU
// IFUNC resolves to the implementation the process bound (a probe on its
// resolver would see nothing), a PLT stub to the function it reaches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "sites/probe_modules.h"
#include "elf_image.h"
#include "result.h"

namespace xref {

// A function and the probe module it lives in (ProbeModules index).
struct ModuleFunction : FunctionSymbol {
  uint32_t module_index = 0;
  // A GNU IFUNC: the demangled name of the implementation the process
  // bound, and where that binding was read; the symbol keeps the name
  // given, its start and size are the implementation's.
  std::string implementation;
  std::string ifunc_slot;
};

// Splits "libc.so.6:malloc" into the module named before the first single
// ':' outside brackets and the rest; C++ "ns::f" and "f[abi:cxx11]()" are
// not split. {"", text} without a module.
std::pair<std::string, std::string> split_module(const std::string& text);

// The text (after any "module:") is a static VA ("0x1234", "4660"), not a
// name: names never start with a digit.
bool names_static_va(const std::string& text);

// The nm command that lists the names `image` is read with: "nm -C" when
// they come from a .symtab (its own or its debug file's), "nm -D -C" for a
// binary with only dynamic symbols (a stripped release build), where plain
// nm prints "no symbols".
std::string nm_command(const ElfImage& image);

// Resolves "symbol" or "0xSTATIC_VA" to a function of `image` (a VA must be
// a function's first byte; names as ElfImage::match_functions). The result
// carries the name the user gave when it is an alias ("getpid", not
// "__getpid" at the same address). `what` starts errors ("--start").
Result<FunctionSymbol> resolve_function(const ElfImage& image, const std::string& text, const std::string& what);

// A static VA (`va`, typed as `what`) that is no code of its module but a
// live address of the process: the error that converts it ("... is a live
// address of this process: its static VA is redis-server:0xaa063"). nullopt
// when the process maps no module's code there.
std::optional<Error> live_address_as_static(ProbeModules& modules, uint64_t va, const std::string& what);

// The same with an optional "module:" in front (the executable without
// one), the module added to `modules`, and a GNU IFUNC bound.
Result<ModuleFunction> resolve_function_name(ProbeModules& modules, const std::string& text, const std::string& what);

// The warning for a GNU IFUNC that `given` named: "libc.so.6:strlen is a
// GNU IFUNC: tracing __strlen_avx2, the implementation the process bound
// (JUMP_SLOT of strlen in app)", with the command's own `verb`.
std::string ifunc_warning(const std::string& given, const ModuleFunction& function, const std::string& verb);

// A PLT stub's target: the function of that name in the first other module
// that defines it (the dynamic linker skipped), added to `modules`; a GNU
// IFUNC as the process bound it. nullopt when no loaded module has it.
std::optional<ModuleFunction> plt_target(ProbeModules& modules, uint32_t module_index, const FunctionSymbol& stub);

}  // namespace xref
