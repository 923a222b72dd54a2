// pprof: the profile as a gzipped profile.proto message
// (render/pprof/profile.proto), what go tool pprof, Parca, Pyroscope and
// Perfetto read (docs/profile.md, "Pictures"):
// - sample types `samples/count` and, for a time event (period_ns > 0),
//   `cpu/nanoseconds` (count x period_ns); period_type names the event;
// - one mapping per executable mapping of a module (live addresses, file
//   offset, file name, build-id), the executable's first as pprof expects;
// - one location per distinct frame address, at its live address (static VA
//   + the module's load bias in the capture), a return address at its call
//   instruction (address - 1, inside the call, which is where pprof's
//   symbolizers look it up), carrying its function when a symbol covers it;
// - functions with `name` demangled and `system_name` as the symbol table
//   spells it;
// - one sample per (stack, thread), labelled `thread` (the tid, numeric)
//   and `thread_name`, so per-thread views keep the split the capture has;
// - `[kernel]` and `[incomplete: REASON]` frames as functions of their own
//   at locations without a mapping, as in the folded stacks and the SVG.
#include <zlib.h>

#include <algorithm>
#include <unordered_map>

#include "render/pprof/profile.pb.h"
#include "render/profile_formats.h"
#include "render/profile_frames.h"

namespace xref::render {
namespace {

class StringTable {
 public:
  explicit StringTable(pprof::Profile& out) : out_(out) { index(""); }
  int64_t index(const std::string& text) {
    auto [it, added] = indexes_.emplace(text, static_cast<int64_t>(indexes_.size()));
    if (added) out_.add_string_table(text);
    return it->second;
  }

 private:
  pprof::Profile& out_;
  std::unordered_map<std::string, int64_t> indexes_;
};

struct LiveMapping {
  uint64_t start = 0, end = 0, id = 0;
};

Result<std::string> gzip(const std::string& bytes) {
  z_stream stream{};
  // 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return make_error(ErrorCode::internal, "pprof: zlib could not start compressing", "");
  }
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) return make_error(ErrorCode::internal, "pprof: zlib could not compress the profile", "");
  return out;
}

// Mapping ids by module, the executable's mappings first.
std::vector<std::vector<LiveMapping>> add_mappings(const Profile& profile, pprof::Profile& out, StringTable& strings) {
  std::vector<uint32_t> order(profile.modules.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::string exe = profile.process.is_object() ? profile.process.value("exe_path", std::string()) : "";
  std::stable_partition(order.begin(), order.end(), [&](uint32_t m) { return profile.modules[m].path == exe; });

  std::vector<std::vector<LiveMapping>> by_module(profile.modules.size());
  for (uint32_t m : order) {
    const ProfileModule& module = profile.modules[m];
    std::vector<ProfileMapping> mappings = module.mappings;
    if (mappings.empty()) mappings.push_back({});  // keeps the module's name and build-id on its locations
    for (const ProfileMapping& mapping : mappings) {
      pprof::Mapping* written = out.add_mapping();
      written->set_id(static_cast<uint64_t>(out.mapping_size()));
      written->set_memory_start(mapping.start);
      written->set_memory_limit(mapping.end);
      written->set_file_offset(mapping.file_offset);
      written->set_filename(strings.index(module.path));
      written->set_build_id(strings.index(module.build_id));
      written->set_has_functions(true);  // every location with a symbol carries its function
      by_module[m].push_back({mapping.start, mapping.end, written->id()});
    }
  }
  return by_module;
}

uint64_t mapping_of(const std::vector<LiveMapping>& mappings, uint64_t live) {
  for (const LiveMapping& mapping : mappings) {
    if (live >= mapping.start && live < mapping.end) return mapping.id;
  }
  return mappings.empty() ? 0 : mappings.front().id;
}

// A frame that is no address ([kernel], [incomplete: why]): its function and
// its location, made the first time it is needed.
class PseudoFrames {
 public:
  PseudoFrames(pprof::Profile& out, StringTable& strings) : out_(out), strings_(strings) {}
  uint64_t location(const std::string& name) {
    auto [it, added] = ids_.emplace(name, 0);
    if (!added) return it->second;
    pprof::Function* function = out_.add_function();
    function->set_id(static_cast<uint64_t>(out_.function_size()));
    function->set_name(strings_.index(name));
    function->set_system_name(strings_.index(name));
    pprof::Location* location = out_.add_location();
    location->set_id(static_cast<uint64_t>(out_.location_size()));
    location->add_line()->set_function_id(function->id());
    return it->second = location->id();
  }

 private:
  pprof::Profile& out_;
  StringTable& strings_;
  std::unordered_map<std::string, uint64_t> ids_;
};

void add_value_types(const Profile& profile, pprof::Profile& out, StringTable& strings) {
  const bool timed = profile.capture.period_ns != 0;
  pprof::ValueType* samples = out.add_sample_type();
  samples->set_type(strings.index("samples"));
  samples->set_unit(strings.index("count"));
  if (timed) {
    pprof::ValueType* cpu = out.add_sample_type();
    cpu->set_type(strings.index("cpu"));
    cpu->set_unit(strings.index("nanoseconds"));
    out.set_default_sample_type(strings.index("cpu"));
  }
  out.mutable_period_type()->set_type(strings.index(profile.capture.event));
  out.mutable_period_type()->set_unit(strings.index(timed ? "nanoseconds" : "count"));
  out.set_period(static_cast<int64_t>(profile.capture.period_ns));
  out.set_time_nanos(static_cast<int64_t>(profile.capture.started_unix_ns));
  out.set_duration_nanos(static_cast<int64_t>(profile.capture.duration_ns));
  std::string about = "xref profile: " + profile.capture.event;
  if (profile.capture.frequency_hz != 0) about += " at " + std::to_string(profile.capture.frequency_hz) + " Hz";
  about += ", callers " + profile.capture.callers;
  out.add_comment(strings.index(about));
  if (!profile.complete()) {
    out.add_comment(strings.index("the capture is not complete: samples were lost or stacks are incomplete "
                                  "([incomplete: ...] frames)"));
  }
}

}  // namespace

Result<std::string> profile_pprof(const Profile& profile) {
  if (auto checked = check_picture_input(profile); !checked) return checked.error();
  pprof::Profile out;
  StringTable strings(out);
  add_value_types(profile, out, strings);
  const auto mappings = add_mappings(profile, out, strings);

  for (const ProfileFunction& function : profile.functions) {
    pprof::Function* written = out.add_function();
    written->set_id(static_cast<uint64_t>(out.function_size()));
    written->set_name(strings.index(function.name));
    written->set_system_name(strings.index(function.raw_name.empty() ? function.name : function.raw_name));
  }
  for (const ProfileLocation& location : profile.locations) {
    pprof::Location* written = out.add_location();
    written->set_id(static_cast<uint64_t>(out.location_size()));
    uint64_t live = location_named_address(location);
    if (location.module != kNoModule) {
      live += profile.modules[location.module].load_bias;
      written->set_mapping_id(mapping_of(mappings[location.module], live));
    }
    written->set_address(live);
    if (location.function) written->add_line()->set_function_id(*location.function + 1);
  }

  PseudoFrames pseudo(out, strings);
  std::unordered_map<uint32_t, const ProfileThread*> threads;
  for (const ProfileThread& thread : profile.threads) threads.emplace(thread.tid, &thread);
  const int64_t thread_key = strings.index("thread");
  const int64_t thread_name_key = strings.index("thread_name");
  for (const ProfileSample& sample : profile.samples) {
    if (sample.count == 0) continue;
    const ProfileStack& stack = profile.stacks[sample.stack];
    pprof::Sample* written = out.add_sample();
    if (stack.in_kernel) written->add_location_id(pseudo.location(kKernelFrame));
    for (uint32_t location : stack.locations) written->add_location_id(location + 1);
    if (!stack_is_whole(stack.end)) written->add_location_id(pseudo.location(incomplete_marker(stack.end)));
    if (written->location_id_size() == 0) written->add_location_id(pseudo.location(kNoFramesFrame));
    written->add_value(static_cast<int64_t>(sample.count));
    if (profile.capture.period_ns != 0) {
      written->add_value(static_cast<int64_t>(sample.count * profile.capture.period_ns));
    }
    pprof::Label* tid = written->add_label();
    tid->set_key(thread_key);
    tid->set_num(sample.tid);
    if (auto thread = threads.find(sample.tid); thread != threads.end() && !thread->second->name.empty()) {
      pprof::Label* name = written->add_label();
      name->set_key(thread_name_key);
      name->set_str(strings.index(thread->second->name));
    }
  }

  std::string bytes;
  if (!out.SerializeToString(&bytes)) {
    return make_error(ErrorCode::internal, "pprof: the profile could not be encoded", "");
  }
  return gzip(bytes);
}

}  // namespace xref::render
