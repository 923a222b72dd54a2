#include "target.h"

#include "elf_image.h"
#include "build_check.h"
#include "target_owner.h"

namespace xref {

namespace {

// --bin must be the same build and the same bytes: an identical copy is the
// executable, a file that only shares its name is not.
Result<std::shared_ptr<const ElfImage>> verify_bin(const std::string& bin, const ProcessIdentity& identity) {
  auto image = ElfImage::open(bin);
  if (!image) return image.error();
  auto difference = build_difference(*image, bin, identity.build_id, identity.exe_sha256, "the process's");
  if (!difference) return difference.error();
  if (!difference->empty()) {
    const std::string pid = std::to_string(identity.pid);
    return make_error(ErrorCode::binary_mismatch, bin + " is not the executable of PID " + pid + ": " + *difference,
                      "pass the exact binary the process runs, or omit --bin to use /proc/" + pid + "/exe");
  }
  return std::make_shared<const ElfImage>(std::move(*image));
}

}  // namespace

Result<Target> open_target(const TargetOptions& options) {
  auto process = ProcessHandle::open(options.pid);
  if (!process) return process.error();
  if (auto owner = check_target_owner(process->pid()); !owner) return owner.error();
  auto space = AddressSpace::read(*process);
  if (!space) return space.error();
  std::string binary_match = "proc_exe_auto";
  if (!options.bin.empty()) {
    auto image = verify_bin(options.bin, process->identity());
    if (!image) return image.error();
    space->set_main_image(*image);
    binary_match = "digest_match";
  }
  if (auto still = process->recheck(); !still) return still.error();
  return Target{std::move(*process), std::move(*space), binary_match};
}

}  // namespace xref
