// xref resolve --pid P LIVE_VA...: which mapping, file offset, static VA,
// function and instruction each live address is.
#include <ostream>

#include "command/process_command.h"
#include "hex.h"
#include "inspect/commands.h"
#include "number_parse.h"
#include "process/module_lines.h"
#include "process/resolve.h"

namespace xref {
namespace {

constexpr size_t kMaxAddresses = 256;

struct ResolveOptions : ProcessCommandOptions {
  std::vector<std::string> addresses;
};

void print_resolved(std::ostream& out, const std::vector<ResolvedAddress>& addresses) {
  for (const ResolvedAddress& address : addresses) {
    out << to_hex(address.live.live_va) << "  ";
    if (!address.live.mapping) {
      out << "not mapped in the process\n";
      continue;
    }
    out << address.live.mapping->perms << " " << address.live.mapping->label() << "  "
        << address_kind_name(address.live.kind);
    if (address.live.file_offset) out << "  file_offset " << to_hex(*address.live.file_offset);
    out << "\n";
    for (const ResolvedCandidate& candidate : address.candidates) out << "    " << describe_candidate(candidate) << "\n";
  }
}

}  // namespace

void setup_resolve(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<ResolveOptions>();
  CLI::App* command =
      app.add_subcommand("resolve", "map live addresses to module, file offset, static VA, function and instruction");
  add_process_options(*command, *options);
  command->add_option("addresses", options->addresses, "live virtual addresses (0x hex or decimal)")
      ->required();
  command->callback([options, &exit_status] {
    Envelope envelope;
    envelope.operation = "live_resolve";
    envelope.limits = {{"max_addresses", kMaxAddresses}};
    std::vector<uint64_t> vas;
    for (const std::string& text : options->addresses) {
      auto va = parse_u64(text, "address");
      if (!va) {
        exit_status = report_early_error(*options, envelope, va.error());
        return;
      }
      vas.push_back(*va);
    }
    if (vas.size() > kMaxAddresses) {
      exit_status = report_early_error(
          *options, envelope,
          make_error(ErrorCode::invalid_argument,
                     std::to_string(vas.size()) + " addresses given; at most " + std::to_string(kMaxAddresses) +
                         " per call",
                     "split the list over several calls"));
      return;
    }
    auto resolved = std::make_shared<std::vector<ResolvedAddress>>();
    exit_status = run_process_command(*options, envelope, [&](Target& target, Envelope& result) -> TextPrinter {
      nlohmann::json addresses = nlohmann::json::array();
      std::string unresolved;
      ModuleLines lines;
      for (uint64_t va : vas) {
        resolved->push_back(resolve_address(target.space, va));
        add_source_lines(resolved->back(), lines);
        addresses.push_back(resolved_json(resolved->back()));
        if (!resolved->back().resolved()) unresolved += (unresolved.empty() ? "" : ", ") + to_hex(va);
      }
      result.data = {{"addresses", addresses}};
      if (!unresolved.empty()) {
        const std::string pid = std::to_string(options->pid);
        result.error = make_error(ErrorCode::address_unmapped,
                                  "not in any file-backed module of PID " + pid + ": " + unresolved,
                                  "check the address against `xref maps --pid " + pid + "`");
      }
      return [resolved](std::ostream& out) { print_resolved(out, *resolved); };
    });
  });
}

}  // namespace xref
