// A sampling profile as a capture holds it and a .xprof file stores it
// (docs/xprof.md, schema_version 1): the process, its modules, the
// deduplicated stacks as lists of locations, and how many samples each
// thread took in each stack. Capture (profile/) fills it, the file
// (xprof/file) writes and reads it, and every report, picture and diff
// starts from it, so a report of a file equals the report of the live
// capture that wrote it.
//
// Addresses of a module's code are static VAs (as the ELF file says, the
// load bias removed): a capture can be read where the process no longer
// exists. Code outside every module (JIT, the vDSO) keeps its live address
// with module kNoModule.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xref {

inline constexpr uint32_t kNoModule = 0xffffffffu;
inline constexpr uint32_t kXprofSchemaVersion = 1;

// Why a stack ends: the names of XREF_STACK_* (shared/profile_abi.h) in the
// file and in every JSON document.
enum class StackEnd {
  complete,           // reached the outermost frame
  leaf_only,          // --callers none
  truncated,          // the frame limit
  no_mapping,         // a pc in no known executable mapping
  table_pending,      // the module's unwind table was not loaded yet
  no_cfi,             // no CFI for the pc
  unsupported_rule,   // a CFI rule the BPF unwinder cannot follow
  read_failed,        // reading the stack failed
  bad_frame,          // the stack pointer went down, or a 0 return address before the end
  no_user_regs,       // no user registers
  table_no_room,      // the module's table did not fit
};
const char* stack_end_name(StackEnd end);
std::optional<StackEnd> stack_end_from_name(const std::string& name);
inline bool stack_is_whole(StackEnd end) { return end == StackEnd::complete || end == StackEnd::leaf_only; }

struct ProfileMapping {
  uint64_t start = 0;  // live
  uint64_t end = 0;
  uint64_t file_offset = 0;
};

struct ProfileModule {
  std::string path;      // as /proc/PID/maps named it
  std::string build_id;  // lowercase hex; empty when the module has none
  uint64_t load_bias = 0;  // live VA - static VA
  std::vector<ProfileMapping> mappings;  // executable ones
  // The unwind table of --callers dwarf: "loaded", "not_needed" (no sample
  // touched the module), "no_cfi", "no_room", "failed" (unwind_error says
  // why), or "not_used" (other --callers).
  std::string unwind_table = "not_used";
  uint32_t unwind_rows = 0;
  std::string unwind_error;
};

struct ProfileFunction {
  uint32_t module = kNoModule;
  std::string name;        // demangled, as nm -C prints it
  std::string raw_name;    // as the symbol table spells it
  uint64_t start = 0;      // static VA
  uint64_t size = 0;
};

// One distinct frame address. A leaf is the sampled pc; a caller frame is a
// return address, named by the call instruction before it (address - 1 is
// inside the call), which is what `function` is.
struct ProfileLocation {
  uint32_t module = kNoModule;
  uint64_t address = 0;  // static VA (live when module is kNoModule)
  bool return_address = false;
  std::optional<uint32_t> function;  // index in Profile::functions; none when no symbol covers it
};

struct ProfileStack {
  std::vector<uint32_t> locations;  // leaf first
  StackEnd end = StackEnd::complete;
  bool in_kernel = false;  // sampled in kernel mode: locations[0] is where the thread entered the kernel
};

struct ProfileSample {
  uint32_t stack = 0;
  uint32_t tid = 0;
  uint64_t count = 0;
};

struct ProfileThread {
  uint32_t tid = 0;
  std::string name;              // comm at the end of the capture (or when last seen)
  uint64_t samples = 0;
  uint64_t cpu_ns = 0;           // the thread's CPU time while sampled: /proc/PID/task/TID/schedstat, start to end
  bool started_during_capture = false;
  bool exited_during_capture = false;
};

struct ProfileCaptureParameters {
  std::string event = "cpu-clock";  // as perf names it
  std::string event_reason;         // why this event: "named by --event", "default: no hardware PMU"
  uint64_t frequency_hz = 0;
  uint64_t period_ns = 0;           // cpu-clock: CPU time per sample
  std::string callers = "dwarf";    // dwarf | fp | lbr | none
  uint32_t max_frames = 0;
  uint64_t started_unix_ns = 0;
  uint64_t duration_ns = 0;
  std::vector<uint32_t> threads_requested;  // --threads; empty: every thread
  std::string ended_by;             // duration, interrupted, target_exited, until_stop, stopped
};

// Counted, never silent: samples the capture lost or could not keep whole.
struct ProfileLosses {
  uint64_t throttled = 0;        // PERF_RECORD_THROTTLE periods: the kernel stopped sampling a while
  uint64_t stacks_full = 0;      // samples whose new stack the stacks map could not take
  uint64_t counts_full = 0;      // samples whose (stack, thread) pair the counts map could not take
  uint64_t requests_lost = 0;    // unwind-table requests the ring could not take
  uint64_t other_process = 0;    // samples of another process (not in the profile)
};

struct Profile {
  nlohmann::json process;  // the envelope's process object (docs/json.md)
  ProfileCaptureParameters capture;
  std::vector<ProfileModule> modules;
  std::vector<ProfileFunction> functions;
  std::vector<ProfileLocation> locations;
  std::vector<ProfileStack> stacks;
  std::vector<ProfileSample> samples;
  std::vector<ProfileThread> threads;
  ProfileLosses losses;
  std::map<std::string, uint64_t> stack_ends;  // stack_end_name -> samples
  uint64_t frames_walked = 0;
  std::vector<std::string> warnings;

  uint64_t total_samples() const;
  bool complete() const;  // no loss, and every stack whole
};

}  // namespace xref
