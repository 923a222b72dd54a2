#include "watch/engine.h"

#include "watch/hw_engine.h"
#include "watch/stores_engine.h"

namespace xref {

Result<WatchBackendChoice> choose_watch_backend(const WatchPlan& plan, const WatchRequest& request) {
  if (request.backend == "stores") return WatchBackendChoice{"stores", "asked for (--backend stores)"};
  std::string words;
  const bool fire = hardware_breakpoints_fire(words);
  if (request.backend == "hw") {
    // The rules first: a range no debug register can take is named on any host.
    if (auto fits = hw_request_fits(plan, request); !fits) return fits.error();
    if (auto fires = hw_registers_fire(); !fires) return fires.error();
    return WatchBackendChoice{"hw", "asked for (--backend hw); " + words};
  }
  if (!fire) return WatchBackendChoice{"stores", "debug registers do not fire here - " + words};
  if (auto fits = hw_request_fits(plan, request); !fits) {
    return WatchBackendChoice{"stores", "the ranges do not fit the debug registers: " + fits.error().message};
  }
  return WatchBackendChoice{"hw", "debug registers fire here - " + words};
}

Result<std::unique_ptr<WatchEngine>> start_watch_engine(const Target& target, WatchPlan& plan,
                                                        const WatchRequest& request,
                                                        const WatchBackendChoice& choice, WatchRecordSink sink) {
  if (choice.backend == "hw") return start_hw_watch_engine(target, plan, request, std::move(sink));
  if (auto sites = plan_store_sites(target, request, plan); !sites) return sites.error();
  return start_stores_watch_engine(plan, request, std::move(sink));
}

}  // namespace xref
