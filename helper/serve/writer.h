// The one writer of protocol lines: whole lines, queued from the main loop
// and every session thread, written by the queue's own thread (output_queue.h),
// so a front end that stops reading never holds up a session's detach or
// the main loop's signals.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "output/output_queue.h"

namespace xref::serve {

class ProtocolWriter {
 public:
  explicit ProtocolWriter(int fd) : queue_(fd) {}

  // Protocol 2 (the helper renders): events go to `sink` instead of the
  // front end; a sink that returns false lets the event out as well.
  using EventSink = std::function<bool(const nlohmann::json& event)>;
  void set_event_sink(EventSink sink) { sink_ = std::move(sink); }
  // The response to request `id`, whoever writes it (a session's thread for
  // session starts, stops and drains), passes through `transform` first; a
  // null result writes nothing (the transform answers later itself).
  using Transform = std::function<nlohmann::json(nlohmann::json response)>;
  void transform_response(const nlohmann::json& id, Transform transform);

  // Queues `message` and a '\n'. False once the front end stopped reading
  // (EPIPE and the like); every later write is dropped.
  bool write(const nlohmann::json& message);
  // The same for a message that may be lost when the front end reads too
  // slowly (a window event): false when it was not queued.
  bool write_droppable(const nlohmann::json& message);
  // A droppable message already written as one JSON line, with its '\n'
  // (a window event: written straight into its buffer, window_format.h).
  bool write_droppable_line(std::string line);
  // A document a newer one of the same `key` makes worthless (a probe
  // session's state at a drain, key: the session): while the older one is
  // still unsent, the newer takes its place in the queue. `make(superseding)`
  // builds the message, told whether it replaces an unsent one. What the
  // queue did: queued, superseded, or refused (the reader is gone).
  OutputQueue::KeyedPush write_superseding(uint64_t key, const std::function<nlohmann::json(bool)>& make);
  // Bytes of answers and events that must go out and wait for the front end.
  size_t backlog_bytes() const { return queue_.essential_bytes(); }
  bool broken() const { return queue_.broken(); }
  // At exit, after every session is detached: what is queued goes out, for
  // at most `grace_ms`.
  OutputTotals finish(int grace_ms) { return queue_.finish(-1, grace_ms); }

 private:
  // The message after the sink and the transforms: null when nothing goes out.
  nlohmann::json routed(const nlohmann::json& message);

  OutputQueue queue_;
  EventSink sink_;
  std::mutex transforms_mutex_;
  std::map<std::string, Transform> transforms_;  // by the request id's JSON text
};

}  // namespace xref::serve
