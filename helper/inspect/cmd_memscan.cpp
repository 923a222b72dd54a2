// xref memscan --pid P U64...: find a word sequence in a live process and
// show what surrounds each hit.
#include <iomanip>
#include <ostream>

#include "command/option_values.h"
#include "command/process_command.h"
#include "hex.h"
#include "inspect/commands.h"
#include "inspect/memscan.h"
#include "number_parse.h"

namespace xref {
namespace {

struct MemscanCommandOptions : ProcessCommandOptions {
  std::vector<std::string> values;
  MemscanOptions scan;
};

void print_memscan(std::ostream& out, const MemscanResult& result) {
  for (const MemscanHit& hit : result.hits) {
    out << "hit " << to_hex(hit.address) << "  in " << hit.region.perms << " " << hit.region.label()
        << (hit.context_clipped ? "  (context clipped at region edge)" : "") << "\n";
    for (const ContextWord& word : hit.context) {
      out << (word.in_match ? "  => " : "     ") << to_hex(word.address) << "  " << std::setw(18)
          << (word.value ? to_hex(*word.value) : std::string("??")) << "  " << word.classification;
      if (!word.evidence.empty()) out << "  " << word.evidence;
      out << "\n";
    }
  }
  out << "summary: hits=" << result.hits.size() << " regions=" << result.regions_scanned
      << " bytes_read=" << result.bytes_read << " skipped_regions=" << result.skipped.size();
  for (const auto& stop : result.stops) out << " stop=" << stop;
  out << "\n";
}

}  // namespace

void setup_memscan(CLI::App& app, int& exit_status) {
  auto options = std::make_shared<MemscanCommandOptions>();
  CLI::App* command = app.add_subcommand(
      "memscan", "search a live process for a sequence of u64 words (aligned, bounded, read-only)");
  add_process_options(*command, *options);
  command->add_option("values", options->values, "u64 words to find, in order (0x hex or decimal)")->required();
  command->add_option("--before-words", options->scan.before_words, "context words before each hit")
      ->capture_default_str()
      ->transform(number_in({0, MemscanLimits::max_context_words}));
  command->add_option("--after-words", options->scan.after_words, "context words after the matched words")
      ->capture_default_str()
      ->transform(number_in({0, MemscanLimits::max_context_words}));
  command->add_option("--max-hits", options->scan.max_hits, "stop after this many hits")
      ->capture_default_str()
      ->transform(number_in({1, MemscanLimits::max_hits}));
  command->add_option("--max-read-bytes", options->scan.max_read_bytes, "stop after reading this many bytes")
      ->capture_default_str()
      ->transform(number_in({8, MemscanLimits::max_read_bytes}));
  command->callback([options, &exit_status] {
    Envelope envelope;
    envelope.operation = "live_memscan";
    envelope.limits = {{"max_hits", options->scan.max_hits},
                       {"before_words", options->scan.before_words},
                       {"after_words", options->scan.after_words},
                       {"max_read_bytes", options->scan.max_read_bytes}};
    for (const std::string& text : options->values) {
      auto value = parse_u64(text, "value");
      if (!value) {
        exit_status = report_early_error(*options, envelope, value.error());
        return;
      }
      options->scan.pattern.push_back(*value);
    }
    if (auto valid = validate(options->scan); !valid) {
      exit_status = report_early_error(*options, envelope, valid.error());
      return;
    }
    exit_status = run_process_command(*options, envelope, [&](Target& target, Envelope& result) -> TextPrinter {
      auto scanned = memscan(options->pid, target.space, options->scan);
      if (!scanned) {
        result.error = scanned.error();
        return nullptr;
      }
      result.data = memscan_json(*scanned);
      result.stops = scanned->stops;
      return [found = std::move(*scanned)](std::ostream& out) { print_memscan(out, found); };
    });
  });
}

}  // namespace xref
