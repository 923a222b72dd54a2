#include "trace/tracefs/records.h"

#include "trace/tracefs/probes.h"

namespace xref {

Result<TracefsRecordDecoder> TracefsRecordDecoder::load(const Tracefs& tracefs, const std::string& group,
                                                        const TracePlan& plan) {
  std::vector<EventFormat> formats;
  formats.reserve(plan.probes.size());
  for (size_t index = 0; index < plan.probes.size(); ++index) {
    if (!plan.probes[index].head) {
      formats.emplace_back();  // no event of its own: its head's event carries it
      continue;
    }
    auto text = tracefs.read("events/" + group + "/" + tracefs_event_name(index) + "/format");
    if (!text) return text.error();
    auto format = parse_event_format(*text);
    if (!format) return format.error();
    formats.push_back(std::move(*format));
  }
  return from_formats(formats, plan);
}

Result<TracefsRecordDecoder> TracefsRecordDecoder::from_formats(const std::vector<EventFormat>& formats,
                                                                const TracePlan& plan) {
  TracefsRecordDecoder decoder;
  if (formats.size() != plan.probes.size()) {
    return make_error(ErrorCode::internal, "one event format per probe expected");
  }
  bool have_common = false;
  for (size_t index = 0; index < formats.size(); ++index) {
    if (!plan.probes[index].head) continue;
    const EventFormat& format = formats[index];
    const PlannedProbe probe = tracefs_event_probe(plan, index);
    const std::string event = tracefs_event_name(index);
    const EventField* type = format.field("common_type");
    const EventField* pid = format.field("common_pid");
    if (type == nullptr || pid == nullptr || type->size > 8 || pid->size > 8) {
      return make_error(ErrorCode::unsupported, event + ": the event format lacks common_type or common_pid");
    }
    if (!have_common) {
      have_common = true;
      decoder.type_field_ = *type;
      decoder.pid_field_ = *pid;
    }
    const TracefsArgNames names = tracefs_arg_names(probe);
    Layout layout;
    layout.probe_index = static_cast<uint32_t>(index);
    const EventField* sp = format.field(names.sp);
    if (sp == nullptr) return make_error(ErrorCode::unsupported, event + ": no field " + names.sp);
    layout.sp = *sp;
    if (!names.ra.empty()) {
      const EventField* ra = format.field(names.ra);
      if (ra == nullptr) return make_error(ErrorCode::unsupported, event + ": no field " + names.ra);
      layout.ra = *ra;
    }
    for (const FetchItem& item : probe.fetches) {
      const EventField* field = format.field(item.name);
      if (field == nullptr) return make_error(ErrorCode::unsupported, event + ": no field " + item.name);
      layout.fetches.push_back(*field);
      layout.types.push_back(item.type);
    }
    decoder.by_id_[format.id] = std::move(layout);
  }
  return decoder;
}

uint32_t TracefsRecordDecoder::thread_of(std::span<const uint8_t> record) const {
  auto pid = read_field(record, pid_field_);
  return pid ? static_cast<uint32_t>(*pid) : 0;
}

std::optional<ProbeHit> TracefsRecordDecoder::decode(std::span<const uint8_t> record, uint64_t timestamp_ns) const {
  auto type = read_field(record, type_field_);
  if (!type) return std::nullopt;
  auto found = by_id_.find(static_cast<uint32_t>(*type));
  if (found == by_id_.end()) return std::nullopt;
  const Layout& layout = found->second;
  ProbeHit hit;
  hit.tid = thread_of(record);
  hit.probe_index = layout.probe_index;
  hit.timestamp_ns = timestamp_ns;
  auto sp = read_field(record, layout.sp);
  if (!sp) return std::nullopt;
  hit.sp = *sp;
  if (layout.ra) {
    auto ra = read_field(record, *layout.ra);
    if (!ra) return std::nullopt;
    hit.return_address = *ra;
  }
  // The kernel cannot say that a number's read failed: a failed read is
  // stored as zero bytes (or left as it was, after a failed inner
  // dereference). A string it could not read has no bytes in the record.
  for (size_t i = 0; i < layout.fetches.size() && i < XREF_FETCH_MAX_ITEMS; ++i) {
    auto raw = read_field(record, layout.fetches[i]);
    if (!raw) return std::nullopt;
    hit.fetch_count = static_cast<uint8_t>(i + 1);
    if (layout.types[i].is_string()) {
      auto string = read_string_field(record, *raw);
      if (!string) {
        hit.fetch_failed = static_cast<uint16_t>(hit.fetch_failed | (1u << i));
        hit.fetch_error[i] = -14;  // EFAULT: all the kernel lets us know
        continue;
      }
      // Cut at its bound, as the BPF program cuts it (the kernel reads more).
      const size_t bound = layout.types[i].string_bound;
      const bool cut = string->size() > bound;
      hit.strings[i] = cut ? string->substr(0, bound) : std::move(*string);
      hit.values[i] = hit.strings[i].size() | (cut ? XREF_STRING_CUT : 0);
      continue;
    }
    hit.values[i] = extend_fetched_value(*raw, layout.types[i]);
  }
  return hit;
}

}  // namespace xref
