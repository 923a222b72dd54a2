// Every public stop, resume and exit of the processes that have sessions,
// caught on a thread of the plugin.
//
// The stop hook (`xref show --new`) does not see every stop: LLDB 19 runs no
// stop hook for a halt, that is an interrupt (Ctrl-C, `process interrupt`):
// Process::ProcessEventData::DoOnRemoval returns before Target::RunStopHooks
// when the event is "interrupted" (lldb/source/Target/Process.cpp). So the
// plugin also listens to the process's broadcaster (eBroadcastBitStateChanged)
// with an SBListener of its own. The debugger's listener is the process's
// primary listener: LLDB hands a state change to other listeners only after
// the primary one has removed it, that is after the stop hook ran
// (Broadcaster.h, "Primary Listener"). A stop the hook printed is therefore
// known when the event arrives here, and each stop prints once. Expression
// evaluation and private (stepping) stops are not forwarded to listeners.
#pragma once

#include <lldb/API/LLDB.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace xref::lldb_plugin {

class StopListener {
 public:
  struct Handlers {
    std::function<void(lldb::SBProcess)> stopped;  // a public stop that stays a stop (not restarted)
    std::function<void(lldb::SBProcess)> resumed;  // the process runs again (continue, step)
    std::function<void(lldb::SBProcess)> exited;   // exited, or detached from
  };

  explicit StopListener(Handlers handlers);
  ~StopListener();
  StopListener(const StopListener&) = delete;
  StopListener& operator=(const StopListener&) = delete;

  // Starts listening to the process's state changes (once per process).
  void watch(lldb::SBProcess process);
  // Ends the thread; the handlers are not called after it returns.
  void stop();

 private:
  void loop();

  Handlers handlers_;
  lldb::SBListener listener_;
  lldb::SBBroadcaster wake_;  // wakes the thread for stop()
  std::mutex mutex_;
  std::set<uint32_t> watched_;  // SBProcess::GetUniqueID
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Prints lines as LLDB prints its own asynchronous output (a stop report,
// a stop hook's output): an eBroadcastBitAsynchronousOutputData event on the
// command interpreter's broadcaster, which the debugger's event thread
// writes to its async output stream (Debugger::DefaultEventHandler in
// lldb/source/Core/Debugger.cpp): the prompt is hidden, the text printed and
// the prompt drawn again. Straight to the output file when nothing handles
// that event (no command interpreter loop runs, as in lldb-dap).
void print_async(lldb::SBDebugger debugger, const std::vector<std::string>& lines);

}  // namespace xref::lldb_plugin
