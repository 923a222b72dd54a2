// A watch's result as the live_watch JSON document (docs/json.md, schema
// version 1, the common envelope): the backend and why, the ranges, the
// sites, every write (old -> new, writer), unobserved changes, re-arms and
// a summary per range. Its text is rendered from the document
// (render/watch_text.h).
#pragma once

#include <nlohmann/json.hpp>

#include "mark/follower.h"
#include "process/symbolizer.h"
#include "process/target.h"
#include "watch/plan.h"
#include "watch/request.h"
#include "watch/run.h"

namespace xref {

// --stop-when in a result: the condition, --stop-skip and the write that
// stopped its thread (null until it fired).
nlohmann::json stop_when_json(const WatchRequest& request, const std::optional<WatchStop>& stop);

class WatchRenderer {
 public:
  WatchRenderer(const Target& target, const WatchPlan& plan, const WatchRequest& request);
  nlohmann::json document(const WatchRun& run);
  // One record as a JSON line of --jsonl ({"type": "write", ...}); `run`
  // (at the end) says where a moved range was at the record's generation.
  nlohmann::json record_json(const WatchRecord& record, const WatchRun* run = nullptr);
  // --mark-file: writes are stamped from this follower.
  void set_marks(MarkFollower* marks) { marks_ = marks; }

 private:
  nlohmann::json writer_json(const WatchRecord& record);
  nlohmann::json hw_writer_json(const WatchRecord& record);
  nlohmann::json ranges_json(const WatchRun& run) const;
  nlohmann::json sites_json() const;
  nlohmann::json summary_json(const WatchRun& run, const nlohmann::json& writes) const;
  nlohmann::json callers_json(const WatchRun& run);
  void add_detail_json(const WatchRecord& record, nlohmann::json& json);

  const Target& target_;
  const WatchPlan& plan_;
  const WatchRequest& request_;
  Symbolizer symbolizer_;
  MarkFollower* marks_ = nullptr;
};

}  // namespace xref
