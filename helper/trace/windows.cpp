#include "trace/windows.h"

#include <algorithm>
#include <cstring>

namespace xref {

WindowCollector::WindowCollector(const TracePlan& plan, uint64_t max_events_held, uint64_t max_string_bytes_held)
    : plan_(plan), max_events_held_(max_events_held), max_string_bytes_held_(max_string_bytes_held) {
  string_slots_.reserve(plan.probes.size());
  for (const PlannedProbe& probe : plan.probes) string_slots_.push_back(fetch_string_slots(probe.fetches));
}

uint64_t TraceWindow::missing_events() const {
  // Received: the events plus the end record; expected: every seq up to the
  // highest seen.
  const bool end_received = ended && !end_record_lost;
  const uint64_t highest = end_received ? end_seq : (events.empty() ? 0 : events.back().seq);
  const uint64_t received = events.size() + (end_received ? 1 : 0);
  if (received == 0) return 0;
  return highest + 1 > received ? highest + 1 - received : 0;
}

void WindowCollector::apply_results(const std::map<uint64_t, xref_window_result>& results) {
  // Not open at the end, no end record, no result: the window ended while
  // its end record was lost, and its result did not survive either.
  for (auto& [window_id, window] : windows_) {
    if (window.ended || results.count(window_id)) continue;
    window.ended = true;
    window.end_status = 0;
    window.end_record_lost = true;
    window.loss_unattributed = true;
  }
  for (const auto& [window_id, result] : results) {
    TraceWindow& window = windows_[window_id];
    window.window_id = window_id;
    window.tid = result.tid;
    window.lost_reported = result.lost;
    if (result.status != 0 && !window.ended) {
      window.ended = true;
      window.end_status = result.status;
      window.end_record_lost = true;
    }
  }
}

void WindowCollector::release(uint64_t window_id) {
  auto found = windows_.find(window_id);
  if (found == windows_.end()) return;
  ++released_.windows;
  released_.complete += found->second.complete() ? 1 : 0;
  released_.events += found->second.events.size();
  events_held_ -= found->second.events.size();
  string_bytes_held_ -= found->second.strings.size();
  // Kept for a later window unless it grew large (a long window's storage
  // goes back to the allocator).
  constexpr size_t kSpareWindows = 64, kSpareEvents = 4096;
  if (spare_.size() < kSpareWindows && found->second.events.capacity() <= kSpareEvents) {
    auto node = windows_.extract(found);
    TraceWindow& window = node.mapped();
    std::vector<TraceEvent> events = std::move(window.events);
    std::vector<EventFetch> fetches = std::move(window.fetches);
    std::string strings = std::move(window.strings);
    window = TraceWindow{};
    window.events = std::move(events);
    window.fetches = std::move(fetches);
    window.strings = std::move(strings);
    window.events.clear();
    window.fetches.clear();
    window.strings.clear();
    spare_.push_back(std::move(node));
    return;
  }
  windows_.erase(found);
}

void WindowCollector::mark_possible_loss(uint64_t window_id) {
  TraceWindow& window = windows_[window_id];
  window.window_id = window_id;
  window.loss_unattributed = true;
}

std::optional<uint64_t> WindowCollector::add(const xref_trace_event& record) {
  ++events_received_;
  if (record.window_id == 0 || record.type < XREF_EVENT_ENTRY || record.type > XREF_EVENT_WINDOW_END) {
    ++unparsed_events_;
    return std::nullopt;
  }
  auto slot = windows_.find(record.window_id);
  if (slot == windows_.end()) {
    if (spare_.empty()) {
      slot = windows_.try_emplace(record.window_id).first;
    } else {
      auto node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = record.window_id;
      slot = windows_.insert(std::move(node)).position;
    }
  }
  TraceWindow& window = slot->second;
  window.window_id = record.window_id;
  window.tid = record.tid;
  if (record.type == XREF_EVENT_WINDOW_END) {
    window.ended = true;
    window.end_status = record.status;
    window.lost_reported = record.lost;
    window.end_seq = record.seq;
    window.end_timestamp_ns = record.timestamp_ns;
    window.end_function_id = record.function_id;
    window.end_inferred = (record.flags & XREF_EVENT_F_INFERRED) != 0;
    return record.window_id;
  }
  // The values the probe's fetches read, as many as both sides know of.
  const bool planned = record.probe_index < plan_.probes.size();
  const size_t count = planned ? std::min<size_t>({plan_.probes[record.probe_index].fetches.size(),
                                                   record.fetch_count, XREF_FETCH_MAX_ITEMS})
                               : 0;
  const std::vector<int>* string_slots = planned ? &string_slots_[record.probe_index] : nullptr;
  uint64_t string_bytes = 0;
  for (size_t i = 0; i < count; ++i) {
    if ((*string_slots)[i] >= 0 && !((record.fetch_failed >> i) & 1u)) {
      string_bytes += std::min<uint64_t>(record.values[i] & XREF_STRING_LENGTH_MASK, XREF_STRING_MAX_BYTES);
    }
  }
  // Past the bounds, an event is counted, not kept: its sequence number
  // stays a gap, so the window shows the loss.
  if (events_held_ >= max_events_held_ || string_bytes_held_ + string_bytes > max_string_bytes_held_) {
    ++window.events_not_kept;
    ++events_not_kept_;
    return std::nullopt;
  }
  ++events_held_;
  TraceEvent event;
  event.seq = record.seq;
  event.type = record.type;
  event.depth = record.depth;
  event.function_id = record.function_id;
  event.probe_index = record.probe_index;
  event.timestamp_ns = record.timestamp_ns;
  event.return_address = record.return_address;
  event.window_begin = record.flags & XREF_EVENT_F_WINDOW_BEGIN;
  event.depth_overflow = record.flags & XREF_EVENT_F_DEPTH_OVERFLOW;
  event.tail = record.flags & XREF_EVENT_F_TAIL;
  event.inferred = record.flags & XREF_EVENT_F_INFERRED;
  if (planned) {
    event.fetch_first = static_cast<uint32_t>(window.fetches.size());
    event.fetch_count = static_cast<uint8_t>(count);
    for (size_t i = 0; i < count; ++i) {
      EventFetch& fetch = window.fetches.emplace_back();
      fetch.read = !((record.fetch_failed >> i) & 1u);
      const int string_slot = (*string_slots)[i];
      if (fetch.read && string_slot >= 0 && string_slot < XREF_FETCH_MAX_STRINGS) {
        // Its bytes up to the first NUL, at most the length the value says.
        const auto* bytes = reinterpret_cast<const char*>(record.strings[string_slot]);
        const size_t length =
            strnlen(bytes, std::min<uint64_t>(record.values[i] & XREF_STRING_LENGTH_MASK, XREF_STRING_MAX_BYTES));
        fetch.value = length | (record.values[i] & XREF_STRING_CUT);
        fetch.string_at = static_cast<uint32_t>(window.strings.size());
        window.strings.append(bytes, length);
        string_bytes_held_ += length;
      } else if (fetch.read) {
        fetch.value = record.values[i];
      } else {
        fetch.error = record.fetch_error[i];
      }
    }
  }
  // The ring buffer hands records over in reservation order, which per
  // thread is program order, so an event is appended; inserted by seq
  // otherwise, so order never depends on it.
  if (window.events.empty() || window.events.back().seq < event.seq) {
    window.events.push_back(event);
    return std::nullopt;
  }
  auto position = std::upper_bound(window.events.begin(), window.events.end(), event.seq,
                                   [](uint64_t seq, const TraceEvent& other) { return seq < other.seq; });
  window.events.insert(position, event);
  return std::nullopt;
}

}  // namespace xref
