#include "process/target.h"

#include "build_check.h"
#include "elf_image.h"
#include "input/input_file.h"
#include "output/json_envelope.h"
#include "process/target_owner.h"

namespace xref {

namespace {

// --bin must be the same build: an identical copy is the executable; a copy
// with the same build-id and other bytes (the unstripped twin of a stripped
// executable) is the same code, and its symbols name the process's bytes; a
// file that only shares the name is refused.
Result<void> use_bin(const std::string& bin, const ProcessIdentity& identity, AddressSpace& space,
                     std::string& binary_match, std::vector<std::string>& warnings) {
  auto image = open_user_elf(bin);
  if (!image) return image.error();
  auto comparison = compare_build(*image, bin, identity.build_id, identity.exe_sha256, "the process's");
  if (!comparison) return comparison.error();
  const std::string pid = std::to_string(identity.pid);
  if (!comparison->difference.empty()) {
    return make_error(ErrorCode::binary_mismatch,
                      bin + " is not the executable of PID " + pid + ": " + comparison->difference,
                      "pass a copy of the build the process runs (the same build-id), or omit --bin to use /proc/" +
                          pid + "/exe");
  }
  if (!comparison->other_bytes) {
    space.set_main_image(std::make_shared<const ElfImage>(std::move(*image)));
    binary_match = "digest_match";
    return {};
  }
  // The code is read from the process's own file, the names from --bin.
  const Module* main = space.main_module();
  if (main == nullptr) return make_error(ErrorCode::internal, "the process's executable is not among its mappings");
  auto own = space.image(*main);
  if (!own) return own.error();
  space.set_main_image(std::make_shared<const ElfImage>((*own)->with_symbols_of(*image)));
  binary_match = "build_id_match";
  warnings.push_back("--bin " + bin + ": its SHA-256 differs from the process's executable, but its build-id " +
                     identity.build_id + " is the same: the same build in other bytes (e.g. stripped)" +
                     (image->has_symtab() ? "; its symbols are used" : ""));
  return {};
}

}  // namespace

Result<Target> open_target(const TargetOptions& options) {
  auto process = ProcessHandle::open(options.pid);
  if (!process) return process.error();
  if (auto owner = check_target_owner(process->pid()); !owner) return owner.error();
  auto space = AddressSpace::read(*process);
  if (!space) return space.error();
  std::string binary_match = "proc_exe_auto";
  std::vector<std::string> warnings;
  if (!options.bin.empty()) {
    if (auto used = use_bin(options.bin, process->identity(), *space, binary_match, warnings); !used) {
      return used.error();
    }
  }
  if (auto still = process->recheck(); !still) return still.error();
  return Target{std::move(*process), std::move(*space), binary_match, std::move(warnings)};
}

nlohmann::json process_json_after(const Target& target) {
  nlohmann::json process = process_json(target.process.identity(), target.binary_match);
  auto still = target.process.recheck();
  process["pid_alive_after"] = still.ok();
  process["process_changed"] = !still.ok() && still.error().code == ErrorCode::process_changed;
  return process;
}

}  // namespace xref
