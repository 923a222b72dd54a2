#include "probe/tracefs/records.h"

#include "probe/tracefs/events.h"

namespace xref {

Result<SiteRecordDecoder> SiteRecordDecoder::load(const TracefsRecording& recording, const ProbePlan& plan) {
  std::vector<EventFormat> formats;
  formats.reserve(plan.sites.size());
  for (size_t index = 0; index < plan.sites.size(); ++index) {
    auto format = recording.event_format(tracefs_event_name(index));
    if (!format) return format.error();
    formats.push_back(std::move(*format));
  }
  return from_formats(formats, plan);
}

Result<SiteRecordDecoder> SiteRecordDecoder::from_formats(const std::vector<EventFormat>& formats,
                                                          const ProbePlan& plan) {
  if (formats.size() != plan.sites.size()) return make_error(ErrorCode::internal, "one event format per site expected");
  SiteRecordDecoder decoder;
  for (size_t index = 0; index < formats.size(); ++index) {
    const EventFormat& format = formats[index];
    const std::string event = tracefs_event_name(index);
    auto field = [&](const std::string& name) -> Result<EventField> {
      const EventField* found = format.field(name);
      if (found == nullptr) return make_error(ErrorCode::unsupported, event + ": no field " + name);
      return *found;
    };
    auto type = field("common_type");
    if (!type) return type.error();
    decoder.type_field_ = *type;
    const ProbeSite& site = plan.sites[index];
    const ProbeEventFields names = probe_event_fields(plan, site);
    Layout layout;
    layout.site = static_cast<uint32_t>(index);
    if (!names.return_address.empty()) {
      auto found = field(names.return_address);
      if (!found) return found.error();
      layout.return_address = *found;
    }
    if (!names.ret.empty()) {
      auto found = field(names.ret);
      if (!found) return found.error();
      layout.ret = *found;
    }
    if (!site.ret) {
      for (const FetchItem& item : plan.fetches) {
        auto found = field(item.name);
        if (!found) return found.error();
        layout.fetches.push_back(*found);
        layout.types.push_back(item.type);
      }
      layout.string_slots = fetch_string_slots(plan.fetches);
    }
    for (const std::string& name : names.regs) {
      auto found = field(name);
      if (!found) return found.error();
      layout.regs.push_back(*found);
    }
    decoder.by_id_[format.id] = std::move(layout);
  }
  return decoder;
}

std::optional<SiteHit> SiteRecordDecoder::decode(std::span<const uint8_t> record, uint64_t timestamp_ns,
                                                 uint32_t tid) const {
  auto type = read_field(record, type_field_);
  if (!type) return std::nullopt;
  auto found = by_id_.find(static_cast<uint32_t>(*type));
  if (found == by_id_.end()) return std::nullopt;
  const Layout& layout = found->second;
  SiteHit hit;
  hit.site = layout.site;
  hit.tid = tid;
  hit.timestamp_ns = timestamp_ns;
  if (layout.return_address) {
    auto value = read_field(record, *layout.return_address);
    if (!value) return std::nullopt;
    hit.return_address = *value;
  }
  if (layout.ret) {
    auto value = read_field(record, *layout.ret);
    if (!value) return std::nullopt;
    hit.ret = *value;
  }
  for (size_t i = 0; i < layout.fetches.size() && i < XREF_FETCH_MAX_ITEMS; ++i) {
    auto raw = read_field(record, layout.fetches[i]);
    if (!raw) return std::nullopt;
    hit.fetch_count = static_cast<uint8_t>(i + 1);
    if (layout.types[i].is_string()) {
      const int slot = i < layout.string_slots.size() ? layout.string_slots[i] : -1;
      if (slot < 0 || slot >= XREF_FETCH_MAX_STRINGS) return std::nullopt;
      auto string = read_string_field(record, *raw);
      if (!string) {
        hit.failed |= static_cast<uint16_t>(1u << i);
        continue;
      }
      const size_t bound = layout.types[i].string_bound;
      const bool cut = string->size() > bound;
      hit.strings[static_cast<size_t>(slot)] = cut ? string->substr(0, bound) : *string;
      hit.values[i] = (cut ? bound : string->size()) | (cut ? XREF_STRING_CUT : 0);
      continue;
    }
    hit.values[i] = extend_fetched_value(*raw, layout.types[i]);
  }
  for (size_t i = 0; i < layout.regs.size() && i < XREF_PROBE_REG_WORDS; ++i) {
    auto value = read_field(record, layout.regs[i]);
    if (!value) return std::nullopt;
    hit.regs[i] = *value;
    hit.has_regs = true;
  }
  return hit;
}

}  // namespace xref
