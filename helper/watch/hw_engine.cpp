// Stubs until the hw engine lands (worker `hw` replaces this file).
#include "watch/hw_engine.h"

namespace xref {

bool hardware_breakpoints_fire(std::string& words) {
  words = "the hw engine is not built yet";
  return false;
}

Result<void> hw_request_fits(const WatchPlan& plan, const WatchRequest& request) {
  (void)plan;
  (void)request;
  return make_error(ErrorCode::unsupported, "hw engine not built yet");
}

Result<std::unique_ptr<WatchEngine>> start_hw_watch_engine(const Target& target, const WatchPlan& plan,
                                                           const WatchRequest& request, WatchRecordSink sink) {
  (void)target;
  (void)plan;
  (void)request;
  (void)sink;
  return make_error(ErrorCode::unsupported, "hw engine not built yet", "use --backend stores");
}

}  // namespace xref
