// xref maps --pid P: the process's mappings, grouped into modules with the
// load bias of each, as the other commands see them.
#include <iomanip>
#include <ostream>

#include "command/process_command.h"
#include "hex.h"
#include "inspect/commands.h"

namespace xref {
namespace {

nlohmann::json maps_json(const Target& target) {
  nlohmann::json mappings = nlohmann::json::array();
  for (const MapEntry& mapping : target.space.maps()) {
    const Module* module = target.space.module_of(mapping);
    mappings.push_back({
        {"start", hex_value(mapping.start)},
        {"end", hex_value(mapping.end)},
        {"perms", mapping.perms},
        {"offset", hex_value(mapping.offset)},
        {"dev", std::to_string(mapping.dev_major) + ":" + std::to_string(mapping.dev_minor)},
        {"inode", mapping.inode},
        {"path", mapping.path},
        {"deleted", mapping.deleted},
        {"module", module ? nlohmann::json(module->name()) : nlohmann::json(nullptr)},
    });
  }
  nlohmann::json modules = nlohmann::json::array();
  for (const Module& module : target.space.modules()) {
    auto image = target.space.image(module);
    auto bias = target.space.load_bias(module);
    nlohmann::json entry = {
        {"name", module.name()},
        {"path", module.path},
        {"main_executable", module.main_executable},
        {"mappings", module.mappings.size()},
        {"load_bias", bias ? nlohmann::json(hex_value(*bias)) : nlohmann::json(nullptr)},
    };
    if (image) {
      entry["build_id"] = (*image)->build_id();
      entry["pie"] = (*image)->is_pie();
    } else {
      entry["image_error"] = image.error().message;
    }
    modules.push_back(std::move(entry));
  }
  return {{"mappings", mappings}, {"modules", modules}};
}

void print_maps(std::ostream& out, const Target& target) {
  const ProcessIdentity& identity = target.process.identity();
  out << "pid " << identity.pid << "  comm " << identity.comm << "  exe " << identity.exe_path
      << (identity.exe_deleted ? " (deleted)" : "") << "  match " << target.binary_match << "\n";
  out << "build-id " << (identity.build_id.empty() ? "(none)" : identity.build_id) << "  sha256 "
      << identity.exe_sha256 << "\n\n";
  for (const MapEntry& mapping : target.space.maps()) {
    out << std::setw(14) << to_hex(mapping.start) << "-" << std::left << std::setw(14) << to_hex(mapping.end)
        << std::right << " " << mapping.perms << " " << std::setw(10) << to_hex(mapping.offset) << "  "
        << mapping.label() << (mapping.deleted ? " (deleted)" : "") << "\n";
  }
  out << "\nmodules:\n";
  for (const Module& module : target.space.modules()) {
    auto bias = target.space.load_bias(module);
    out << "  " << std::left << std::setw(28) << module.name() << std::right << " bias "
        << (bias ? to_hex(*bias) : std::string("unknown")) << (module.main_executable ? "  [main]" : "") << "\n";
  }
}

}  // namespace

void setup_maps(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<ProcessCommandOptions>();
  CLI::App* command = app.add_subcommand("maps", "list the mappings and modules of a live process");
  add_process_options(*command, *options);
  command->callback([options, &exit_status] {
    Envelope envelope;
    envelope.operation = "live_maps";
    exit_status = run_process_command(*options, envelope, [](Target& target, Envelope& result) -> TextPrinter {
      result.data = maps_json(target);
      return [&target](std::ostream& out) { print_maps(out, target); };
    });
  });
}

}  // namespace xref
