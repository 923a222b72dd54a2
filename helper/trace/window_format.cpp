#include "trace/window_format.h"

#include <algorithm>
#include <map>

#include "attach/fetched_value.h"
#include "hex.h"
#include "output/json_envelope.h"
#include "trace/session.h"

namespace xref {
namespace {

// Keys are written in sorted order throughout, as nlohmann's objects keep
// them (json_writer.h): the bytes are those of json_text() on the same value.

std::string hex_json(uint64_t value) {
  std::string text = "\"";
  append_hex(text, value);
  text += '"';
  return text;
}

// The window's lost events when they are counted; unknown when the backend
// only knows that loss happened while the window was open.
std::optional<uint64_t> lost_count(const TraceWindow& window) {
  const uint64_t counted = std::max<uint64_t>(window.lost_reported, window.missing_events());
  if (counted == 0 && window.loss_unattributed) return std::nullopt;
  return counted;
}

}  // namespace

std::string_view event_kind_name(uint8_t type) {
  switch (type) {
    case XREF_EVENT_ENTRY: return "entry";
    case XREF_EVENT_RETURN: return "return";
    case XREF_EVENT_TAIL_EXIT: return "tail_exit";
    case XREF_EVENT_UNWOUND: return "unwound";
    case XREF_EVENT_STOP: return "stop";
  }
  return "unknown";
}

std::optional<uint64_t> WindowFormat::live_of(uint32_t module_index, uint64_t static_va) const {
  if (module_index >= plan_.modules.size()) return std::nullopt;
  auto live = target_.space.live_from_static(*plan_.modules[module_index].module, static_va);
  return live ? std::optional<uint64_t>(*live) : std::nullopt;
}

WindowFormat::WindowFormat(const Target& target, const TracePlan& plan)
    : target_(target), plan_(plan), symbolizer_(target.space, plan.module) {
  for (const TracedFunction& traced : plan.functions) {
    FunctionText& text = functions_.emplace_back();
    text.symbol_json = json_string(traced.symbol.demangled);
    if (!traced.indirect) {
      if (auto live = live_of(traced.module_index, traced.symbol.start)) text.target_live_json = hex_json(*live);
    }
    if (traced.module_index != 0 && traced.module_index < plan.modules.size()) {
      text.module = plan.modules[traced.module_index].module->name();
      text.module_json = json_string(text.module);
    }
    if (!traced.implementation.empty()) text.implementation_json = json_string(traced.implementation);
    has_indirect_ = has_indirect_ || traced.indirect;
  }
  for (const PlannedProbe& planned : plan.probes) {
    ProbeText& text = probes_.emplace_back();
    if (auto live = live_of(planned.module_index, planned.static_va)) {
      text.fields_json = "\"probe_live\":" + hex_json(*live) + ",";
    }
    text.fields_json += "\"probe_va\":" + hex_json(planned.static_va);
    for (const FetchItem& item : planned.fetches) {
      if (item.name == "target" && text.target_fetch < 0) text.target_fetch = static_cast<int>(text.fetches.size());
      text.fetches.push_back({item.name, json_string(item.name), json_string(fetch_type_name(item.type)),
                              item.type.is_signed, item.type.is_string()});
    }
    text.call_site = planned.kind == XREF_PROBE_CALL_SITE || planned.kind == XREF_PROBE_TAIL_SITE;
  }
  start_va_ = to_hex(plan.start_va);
  stop_va_ = plan.stop_va ? to_hex(*plan.stop_va) : to_hex(plan.stop_return_va);
  if (plan.start_module_index != 0) start_module_ = plan.modules[plan.start_module_index].module->name();
}

std::string_view WindowFormat::status(const TraceWindow& window, bool target_exited) {
  if (window.ended) {
    switch (window.end_status) {
      // A window that lost events is never complete.
      case XREF_WINDOW_COMPLETE: return window.has_loss() ? "incomplete" : "complete";
      case XREF_WINDOW_TRUNCATED: return "truncated";
      case XREF_WINDOW_UNWOUND: return "unwound";
    }
    return "unknown";
  }
  return target_exited ? "target_exited" : "open_at_stop";
}

bool WindowFormat::possible_loss(const TraceWindow& window, const TraceRun* run) {
  if (window.has_loss()) return true;
  // A window whose end record never came may have lost it.
  return !window.ended && run != nullptr && run->counters.lost_events > 0;
}

const WindowFormat::CallSiteText& WindowFormat::entry_call_site(const TraceEvent& event) {
  // By probe for a call-site probe (the probe is the call instruction), by
  // return address otherwise: the two key spaces cannot meet, probe
  // indexes being far below any code address.
  const ProbeText* probe = this->probe(event.probe_index);
  const uint64_t key = probe != nullptr && probe->call_site ? event.probe_index : event.return_address;
  auto [slot, added] = call_sites_.try_emplace(key);
  CallSiteText& text = slot->second;
  if (!added) return text;
  CallSiteInfo info;
  if (probe != nullptr && probe->call_site) {
    const PlannedProbe& planned = plan_.probes[event.probe_index];
    const PlanModule& module = plan_.modules[planned.module_index];
    info.known = true;
    info.verified = true;
    info.call_site_va = planned.static_va;
    if (auto live = live_of(planned.module_index, planned.static_va)) info.call_site_live = *live;
    if (const FunctionSymbol* caller = module.image->function_containing(planned.static_va)) {
      info.caller_va = caller->start;
      info.caller = caller->demangled;
    }
    if (planned.module_index != 0) info.module = module.module->name();
  } else {
    info = symbolizer_.call_site(event.return_address);
  }
  text.fields_json = "\"call_site_live\":" + (info.call_site_live ? hex_json(info.call_site_live) : "null");
  if (!info.module.empty()) text.fields_json += ",\"call_site_module\":" + json_string(info.module);
  text.fields_json += ",\"call_site_va\":" + (info.known ? hex_json(info.call_site_va) : "null");
  text.fields_json += std::string(",\"call_site_verified\":") + (info.verified ? "true" : "false");
  if (!info.caller.empty()) text.fields_json += ",\"caller\":" + json_string(info.caller);
  text.fields_json += ",\"caller_va\":" + (info.caller_va ? hex_json(info.caller_va) : "null");
  return text;
}


std::optional<uint64_t> WindowFormat::target_fetch(const TraceWindow& window, const TraceEvent& event,
                                                   bool last) const {
  const ProbeText* probe = this->probe(event.probe_index);
  if (probe == nullptr || probe->target_fetch < 0) return std::nullopt;
  std::optional<uint64_t> found;
  const EventFetch* fetches = window.fetches_of(event);
  for (size_t i = 0; i < event.fetch_count; ++i) {
    if (probe->fetches[i].name != "target" || !fetches[i].read) continue;
    found = fetches[i].value;
    if (!last) break;
  }
  return found;
}

// An indirect call's target, named from the value fetched at the call.
const WindowFormat::IndirectTarget* WindowFormat::indirect_target(const TraceWindow& window,
                                                                  const TraceEvent& event) {
  if (event.function_id >= plan_.functions.size() || !plan_.functions[event.function_id].indirect) return nullptr;
  const auto live = target_fetch(window, event, false);
  if (!live) return nullptr;
  auto [slot, added] = indirect_names_.try_emplace(*live);
  if (added) {
    if (auto named = symbolizer_.code_address(*live)) {
      slot->second = {named->static_va, named->name()};
    } else {
      slot->second = {*live, "?"};
    }
  }
  return &slot->second;
}

// Returns of an indirect call carry only the call site's placeholder; the
// target named at the entry is remembered per depth for them.
void WindowFormat::resolve_indirect(const TraceWindow& window) {
  contexts_.assign(window.events.size(), EventContext{});
  if (!has_indirect_) return;
  std::vector<const IndirectTarget*> frames;
  for (size_t i = 0; i < window.events.size(); ++i) {
    const TraceEvent& event = window.events[i];
    const IndirectTarget* at_entry = indirect_target(window, event);
    const IndirectTarget* known = nullptr;
    if (event.type == XREF_EVENT_ENTRY) {
      if (frames.size() <= event.depth) frames.resize(event.depth + 1);
      frames[event.depth] = at_entry;
      known = at_entry;
    } else if (event.type != XREF_EVENT_STOP && event.depth < frames.size()) {
      known = frames[event.depth];
      frames[event.depth] = nullptr;
    }
    if (known == nullptr) continue;
    contexts_[i].indirect = known;
    contexts_[i].indirect_live = target_fetch(window, event, true);
  }
}

void WindowFormat::append_fetches_json(JsonWriter& json, const TraceWindow& window, const TraceEvent& event) {
  json.begin_array();
  const ProbeText* probe = this->probe(event.probe_index);
  const EventFetch* fetches = window.fetches_of(event);
  for (size_t i = 0; probe != nullptr && i < event.fetch_count; ++i) {
    const FetchName& name = probe->fetches[i];
    json.begin_object();
    if (fetches[i].read && name.is_string) {
      // {length name string truncated type}, no value: as fetched_json writes it.
      const std::string_view bytes = window.string_of(fetches[i]);
      json.key("length").number(bytes.size());
      json.key("name").raw(name.name_json);
      json.key("string").string(bytes);
      json.key("truncated").boolean((fetches[i].value & XREF_STRING_CUT) != 0);
      json.key("type").raw(name.type_json);
      json.end_object();
      continue;
    }
    if (!fetches[i].read) json.key("error").string(fetch_error_text(fetches[i].error));
    json.key("name").raw(name.name_json);
    if (fetches[i].read && name.is_signed) json.key("signed_value").signed_number(static_cast<int64_t>(fetches[i].value));
    json.key("type").raw(name.type_json);
    json.key("value");
    if (fetches[i].read) {
      json.hex(fetches[i].value);
    } else {
      json.null();
    }
    json.end_object();
  }
  json.end_array();
}

void WindowFormat::append_event_json(JsonWriter& json, const TraceWindow& window, const TraceEvent& event,
                                     const EventContext& context) {
  const bool stop = event.type == XREF_EVENT_STOP;
  const FunctionText* function = this->function(event.function_id);
  json.begin_object();
  if (event.type == XREF_EVENT_ENTRY) json.raw(entry_call_site(event).fields_json);
  json.key("depth").number(event.depth);
  if (event.depth_overflow) json.key("depth_overflow").boolean(true);
  json.key("fetches");
  append_fetches_json(json, window, event);
  if (!stop && function != nullptr && !function->implementation_json.empty()) {
    json.key("implementation").raw(function->implementation_json);
  }
  if (context.indirect != nullptr) json.key("indirect").boolean(true);
  if (event.inferred) json.key("inferred").boolean(true);
  json.key("kind").string(event_kind_name(event.type));
  if (function != nullptr && !function->module_json.empty()) json.key("module").raw(function->module_json);
  if (const ProbeText* probe = this->probe(event.probe_index)) json.raw(probe->fields_json);
  json.key("seq").number(event.seq);
  json.key("symbol");
  if (context.indirect != nullptr) {
    json.string(context.indirect->name);
  } else if (stop) {
    json.raw("\"\"");
  } else if (function != nullptr) {
    json.raw(function->symbol_json);
  } else {
    json.raw("\"?\"");
  }
  json.key("tail_call").boolean(event.type == XREF_EVENT_TAIL_EXIT || event.tail);
  if (context.indirect_live) {
    json.key("target_live").hex(*context.indirect_live);
  } else if (!stop && function != nullptr && !function->target_live_json.empty()) {
    json.key("target_live").raw(function->target_live_json);
  }
  json.key("target_va");
  if (context.indirect != nullptr) {
    json.hex(context.indirect->static_va);
  } else if (stop && plan_.stop_va) {
    json.hex(*plan_.stop_va);
  } else {
    json.hex(function != nullptr ? plan_.functions[event.function_id].symbol.start : 0);
  }
  json.key("timestamp_ns").number(event.timestamp_ns);
  json.end_object();
}

void WindowFormat::append_mark_json(JsonWriter& json, const TraceWindow& window) {
  if (marks_ == nullptr) return;
  nlohmann::json fields = nlohmann::json::object();
  add_mark_json(fields, marks_->stamp(window.first_timestamp_ns()));
  for (const auto& [key, value] : fields.items()) json.key(key).raw(json_text(value));
}

std::string WindowFormat::ended_in(const TraceWindow& window) const {
  // A start frame handed by a tail jump to untraced code: where it ended.
  if (!window.ended || window.end_function_id == XREF_FUNCTION_NONE) return "";
  const FunctionText* function = this->function(window.end_function_id);
  if (function == nullptr) return "?";
  const std::string& name = plan_.functions[window.end_function_id].symbol.demangled;
  return function->module.empty() ? name : function->module + ":" + name;
}

void WindowFormat::append_json(std::string& out, const TraceWindow& window, const TraceRun* run) {
  resolve_indirect(window);
  out.reserve(out.size() + 640 + 448 * window.events.size());  // about what it takes: one allocation
  const bool exited = run != nullptr && run->target_exited;
  const uint64_t start_ns = window.first_timestamp_ns();
  const uint64_t end_ns = window.ended ? window.end_timestamp_ns
                                       : (window.events.empty() ? 0 : window.events.back().timestamp_ns);
  JsonWriter json(out);
  json.begin_object();
  json.key("duration_ns").number(end_ns >= start_ns ? end_ns - start_ns : 0);
  // Whether a probe saw the end of a start frame handed to untraced code
  // (a continuation ret), or a later event above the frame implied it.
  json.key("end_inferred").boolean(window.ended && window.end_inferred);
  json.key("end_record_lost").boolean(window.end_record_lost);
  json.key("end_timestamp_ns").number(end_ns);
  if (const std::string ended = ended_in(window); !ended.empty()) json.key("ended_in").string(ended);
  json.key("events").begin_array();
  const TraceEvent* begin = nullptr;
  for (size_t i = 0; i < window.events.size(); ++i) {
    append_event_json(json, window, window.events[i], contexts_[i]);
    if (window.events[i].window_begin) begin = &window.events[i];
  }
  json.end_array();
  json.key("events_not_kept").number(window.events_not_kept);
  json.key("lost_events");
  if (auto lost = lost_count(window)) {
    json.number(*lost);
  } else {
    json.null();
  }
  append_mark_json(json, window);
  json.key("possible_loss").boolean(possible_loss(window, run));
  json.key("start_fetches");
  if (begin != nullptr) {
    append_fetches_json(json, window, *begin);
  } else {
    json.raw("[]");
  }
  // A start function in a library: its VA is that module's.
  if (!start_module_.empty()) json.key("start_module").string(start_module_);
  json.key("start_timestamp_ns").number(start_ns);
  json.key("start_va").string(start_va_);
  json.key("status").string(status(window, exited));
  json.key("stop_va").string(stop_va_);
  json.key("tid").number(window.tid);
  json.key("window_id").number(window.window_id);
  json.end_object();
}

}  // namespace xref
