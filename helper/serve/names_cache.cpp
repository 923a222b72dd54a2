#include "serve/names_cache.h"

#include <iterator>

#include "render/json_fields.h"

namespace xref::serve {
namespace {

std::string text_of(const nlohmann::json& entry, const char* key) {
  const auto found = entry.find(key);
  return found != entry.end() && found->is_string() ? found->get<std::string>() : std::string();
}

// One process's helper names, shared by the texts rendered on any thread.
class LockedNames : public render::Names {
 public:
  explicit LockedNames(std::unique_ptr<render::Names> names) : names_(std::move(names)) {}
  std::optional<render::Place> place(const render::CodeAddress& address) override {
    std::lock_guard lock(mutex_);
    return names_->place(address);
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<render::Names> names_;
};

class CachedNames : public render::Names {
 public:
  using Places = std::map<uint64_t, std::optional<render::Place>>;
  CachedNames(std::shared_ptr<const Places> places, std::shared_ptr<render::Names> fallback)
      : places_(std::move(places)), fallback_(std::move(fallback)) {}

  std::optional<render::Place> place(const render::CodeAddress& address) override {
    if (address.live && places_) {
      const auto found = places_->find(*address.live);
      if (found != places_->end() && found->second) return found->second;
    }
    return fallback_ ? fallback_->place(address) : std::nullopt;
  }

 private:
  std::shared_ptr<const Places> places_;  // the debugger's, a snapshot shared with the cache
  std::shared_ptr<render::Names> fallback_;
};

}  // namespace

std::optional<ProtocolError> NamesCache::add(const nlohmann::json& params) {
  const auto pid = params.find("pid");
  const auto names = params.find("names");
  if (pid == params.end() || !pid->is_number_integer() || pid->get<int64_t>() <= 0 || names == params.end() ||
      !names->is_array()) {
    return protocol_error("invalid_request", "names needs params.pid (a positive integer) and params.names (an array)");
  }
  const pid_t process = static_cast<pid_t>(pid->get<int64_t>());
  std::lock_guard lock(mutex_);
  // The next snapshot; the current one stays as it is for texts rendering with it.
  const auto current = places_.find(process);
  Places places = current != places_.end() && current->second ? *current->second : Places{};
  for (const nlohmann::json& entry : *names) {
    if (!entry.is_object()) return protocol_error("invalid_request", "each of params.names must be an object");
    const auto live = render::address_value(entry.value("address", nlohmann::json()));
    if (!live) return protocol_error("invalid_request", "a name whose \"address\" is not a live address \"0x...\": " + entry.dump());
    if (places.size() >= kKeptPerProcess) places.clear();
    const std::string function = text_of(entry, "function");
    const std::string file = text_of(entry, "file");
    if (entry.value("unknown", false) || (function.empty() && file.empty())) {
      places[*live] = std::nullopt;
      continue;
    }
    render::Place place;
    place.debugger = true;  // shown as the debugger spells it
    place.function = function;
    place.offset = render::address_value(entry.value("offset", nlohmann::json(0))).value_or(0);
    place.file = file;
    const auto line = entry.find("line");
    if (line != entry.end() && line->is_number_unsigned()) place.line = line->get<uint32_t>();
    places[*live] = std::move(place);
  }
  places_[process] = std::make_shared<const Places>(std::move(places));
  if (places_.size() > kKeptProcesses) {
    const auto oldest = places_.begin()->first == process ? std::next(places_.begin()) : places_.begin();
    places_.erase(oldest);
  }
  return std::nullopt;
}

bool NamesCache::has(pid_t pid, uint64_t live) const {
  std::lock_guard lock(mutex_);
  const auto found = places_.find(pid);
  return found != places_.end() && found->second && found->second->count(live) > 0;
}

std::unique_ptr<render::Names> NamesCache::names_for(pid_t pid, bool debugger) {
  std::shared_ptr<const Places> places;
  std::shared_ptr<render::Names> helper;
  {
    std::lock_guard lock(mutex_);
    if (debugger) {
      const auto found = places_.find(pid);
      if (found != places_.end()) places = found->second;  // shared, not copied
    }
    helper = helper_by_pid_[pid];
  }
  if (!helper && helper_names_) {
    if (auto made = helper_names_(pid)) helper = std::make_shared<LockedNames>(std::move(made));
    std::lock_guard lock(mutex_);
    if (helper) helper_by_pid_[pid] = helper;
    while (helper_by_pid_.size() > kKeptProcesses) helper_by_pid_.erase(helper_by_pid_.begin());
  }
  return std::make_unique<CachedNames>(std::move(places), std::move(helper));
}

}  // namespace xref::serve
