// How functions and modules are named (issue 12, defects 6, 8, 9), checked
// against what nm -C, readelf and the targets themselves say: GNU IFUNCs are
// traced at the implementation the process bound; C++ names as nm -C prints
// them, with or without their parameter list; modules by file name, soname,
// symlink or path; the name given is the name printed; a stripped process is
// named through its unstripped twin (same build-id).
#include <sys/stat.h>

#include <fstream>

#include "trace_harness.h"

namespace xref::test {
namespace {

struct NmSymbol {
  uint64_t va = 0;
  char type = '?';
  std::string name;
};

// `nm [flags] path`, defined symbols only.
std::vector<NmSymbol> nm_symbols(const std::string& flags, const std::string& path) {
  std::vector<NmSymbol> symbols;
  for (const auto& line : command_lines("nm --defined-only " + flags + " '" + path + "'")) {
    std::istringstream fields(line);
    NmSymbol symbol;
    std::string address, type;
    if (!(fields >> address >> type) || !std::getline(fields, symbol.name) || symbol.name.size() < 2) continue;
    symbol.va = std::stoull(address, nullptr, 16);
    symbol.type = type[0];
    symbol.name = symbol.name.substr(1);
    symbols.push_back(std::move(symbol));
  }
  return symbols;
}

uint64_t nm_va(const std::vector<NmSymbol>& symbols, const std::string& name) {
  for (const auto& symbol : symbols) {
    if (symbol.name == name) return symbol.va;
  }
  ADD_FAILURE() << "nm has no " << name;
  return 0;
}

std::string pid_of(const TargetProcess& target) { return std::to_string(target.pid()); }

// The file a process maps whose name starts with `prefix`, and its load
// bias (its mapping at file offset 0; these are ET_DYN files whose first
// PT_LOAD is at VA 0, as readelf -l shows).
struct MappedFile {
  std::string path;
  uint64_t bias = 0;
};

MappedFile mapped_file(pid_t pid, const std::string& prefix) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, permissions, offset, device, inode, path;
    if (!(fields >> range >> permissions >> offset >> device >> inode >> path)) continue;
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.rfind(prefix, 0) == 0 && std::stoull(offset, nullptr, 16) == 0) {
      return {path, std::stoull(range.substr(0, range.find('-')), nullptr, 16)};
    }
  }
  ADD_FAILURE() << "no mapping of " << prefix;
  return {};
}

std::string build_id(const std::string& path) {
  const std::string notes = command_output("readelf -n '" + path + "'");
  const size_t at = notes.find("Build ID: ");
  if (at == std::string::npos) return "";
  return notes.substr(at + 10, notes.find('\n', at) - at - 10);
}

// The separate debug file of a build-id (libc6-dbg installs libc's), or "".
std::string debug_file(const std::string& path) {
  const std::string id = build_id(path);
  if (id.size() < 4) return "";
  const std::string debug = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  struct stat status;
  return stat(debug.c_str(), &status) == 0 ? debug : "";
}

std::vector<std::string> names_target_command(const RecordFile& record, std::vector<std::string> extra) {
  std::vector<std::string> argv = {XREF_NAMES_TARGET, "--record", record.path, "--go-file", record.go_file(),
                                   "--interval-us", "2000", "--requests", "20000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

// The same with libc's SSE2 string functions: glibc's tunables take AVX2
// and AVX-512 away from its IFUNC resolvers. The AVX2 and EVEX variants this
// host would bind cannot be traced: Capstone 4 does not decode EVEX
// instructions (xref refuses the function, exit status 13), and the kernel
// puts no uprobe on a VEX-encoded instruction (__memset_avx2_* starts with
// vmovd). Which variant the process binds is its own choice either way; the
// tests check that xref follows it.
std::vector<std::string> sse2_names_target_command(const RecordFile& record, std::vector<std::string> extra) {
  std::vector<std::string> argv = names_target_command(record, std::move(extra));
  argv.insert(argv.begin(), {"/usr/bin/env", "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-AVX512F,-AVX512VL,-AVX512BW"});
  return argv;
}

// names_target's record: per round, how often measure called each function.
std::map<uint64_t, std::map<std::string, uint64_t>> read_calls(const std::string& path, uint64_t through_round) {
  std::map<uint64_t, std::map<std::string, uint64_t>> rounds;
  for (int attempt = 0; attempt < 200; ++attempt) {
    rounds.clear();
    std::ifstream file(path);
    std::string line;
    while (std::getline(file, line)) {
      std::istringstream fields(line);
      uint64_t round;
      std::string pair;
      if (!(fields >> round)) continue;
      while (fields >> pair) {
        const size_t equals = pair.find('=');
        rounds[round][pair.substr(0, equals)] = std::stoull(pair.substr(equals + 1));
      }
    }
    if (rounds.count(through_round)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  return rounds;
}

std::map<std::string, uint64_t> entries_by_symbol(const nlohmann::json& window) {
  std::map<std::string, uint64_t> entries;
  for (const auto& event : window["events"]) {
    if (event["kind"] == "entry") ++entries[event["symbol"].get<std::string>()];
  }
  return entries;
}

const nlohmann::json* first_entry(const nlohmann::json& window, const std::string& symbol) {
  for (const auto& event : window["events"]) {
    if (event["kind"] == "entry" && event["symbol"] == symbol) return &event;
  }
  return nullptr;
}

bool mentions(const nlohmann::json& warnings, const std::string& text) {
  for (const auto& warning : warnings) {
    if (warning.get<std::string>().find(text) != std::string::npos) return true;
  }
  return false;
}

// strlen and memset are GNU IFUNCs in libc: their symbols are resolvers. The
// probes must sit on the implementations the process calls (the addresses
// it prints), and see every call measure() records.
TEST(TraceNamesCli, IfuncIsTracedAtTheImplementationTheProcessBound) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("ifunc");
  TargetProcess target(sse2_names_target_command(record, {}));
  const MappedFile libc = mapped_file(target.pid(), "libc.so");
  const auto libc_dynamic = nm_symbols("-D", libc.path);
  for (const std::string name : {"strlen", "memset"}) {
    bool ifunc = false;
    for (const auto& symbol : libc_dynamic) ifunc |= symbol.name == name + "@@GLIBC_2.2.5" && symbol.type == 'i';
    ASSERT_TRUE(ifunc) << "nm -D does not show " << name << " as an IFUNC ('i') in " << libc.path;
  }
  const uint64_t strlen_va = target.value("func", "strlen") - libc.bias;
  const uint64_t memset_va = target.value("func", "memset") - libc.bias;

  const XrefRun run = run_xref_attached({"trace", "--pid", pid_of(target), "--start", "measure", "--fetch",
                                         "round=%di:u64", "--functions", "libc.so.6:strlen,libc.so.6:memset",
                                         "--max-windows", "6", "--duration-ms", "20000", "--json"},
                                        record.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 6u);
  // names_target took their addresses: its GLOB_DAT slots hold them.
  EXPECT_TRUE(mentions(document["warnings"], "libc.so.6:strlen is a GNU IFUNC: tracing __strlen_sse2")) << document["warnings"];
  EXPECT_TRUE(mentions(document["warnings"], "GLOB_DAT of memset in names_target")) << document["warnings"];
  uint64_t last_round = 0;
  for (const auto& window : document["windows"]) last_round = std::max(last_round, fetched(window["start_fetches"], "round"));
  const auto rounds = read_calls(record.path, last_round);
  const std::string debug = debug_file(libc.path);
  const auto libc_symbols = debug.empty() ? std::vector<NmSymbol>{} : nm_symbols("", debug);
  for (const auto& window : document["windows"]) {
    const uint64_t round = fetched(window["start_fetches"], "round");
    ASSERT_TRUE(rounds.count(round)) << "round " << round << " not recorded";
    const auto entries = entries_by_symbol(window);
    EXPECT_EQ(entries.count("strlen") ? entries.at("strlen") : 0, rounds.at(round).at("strlen")) << "round " << round;
    EXPECT_EQ(entries.count("memset") ? entries.at("memset") : 0, rounds.at(round).at("memset")) << "round " << round;
    for (const auto& [name, va] : {std::pair{std::string("strlen"), strlen_va}, std::pair{std::string("memset"), memset_va}}) {
      const nlohmann::json* event = first_entry(window, name);
      ASSERT_NE(event, nullptr) << name << " in round " << round;
      EXPECT_EQ((*event)["module"], "libc.so.6");
      EXPECT_EQ((*event)["target_va"], hex_string(va)) << name << ": not where the process's GOT points";
      ASSERT_TRUE(event->contains("implementation"));
      const std::string implementation = (*event)["implementation"];
      if (!libc_symbols.empty()) {
        // libc's debug symbols name the code at that address (__strlen_avx2 ...).
        bool named = false;
        for (const auto& symbol : libc_symbols) named |= symbol.va == va && symbol.name == implementation;
        EXPECT_TRUE(named) << implementation << " is not a name nm gives " << hex_string(va) << " in " << debug;
        EXPECT_EQ(implementation.rfind("__" + name + "_", 0), 0u) << implementation;
      }
    }
  }

  // The text names the function as given, then the implementation.
  const XrefRun text = run_xref({"trace", "--pid", pid_of(target), "--start", "measure", "--functions",
                                 "libc.so.6:strlen", "--max-windows", "1", "--duration-ms", "20000"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("> strlen \u2192 __strlen_sse2  "), std::string::npos) << text.out;
}

// An IFUNC no GOT slot is bound to yet (lazy binding, never called, and no
// IRELATIVE slot of libc's own) is refused, naming its implementations; once
// the process calls it, it is traced.
TEST(TraceNamesCli, UnboundIfuncIsRefusedUntilTheProcessCallsIt) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("lazy");
  TargetProcess target(names_target_command(record, {}));
  record.release();
  const MappedFile libc = mapped_file(target.pid(), "libc.so");
  // An IFUNC names_target imports and calls only with --call-lazy, whose
  // resolver no IRELATIVE relocation of libc names (readelf -r).
  const std::string relocations = command_output("readelf -rW '" + libc.path + "'");
  std::string lazy;
  for (const std::string name : {"wcsrchr", "strstr"}) {
    for (const auto& symbol : nm_symbols("-D", libc.path)) {
      if (symbol.name != name + "@@GLIBC_2.2.5" || symbol.type != 'i') continue;
      char addend[32];
      std::snprintf(addend, sizeof addend, " %llx\n", static_cast<unsigned long long>(symbol.va));
      bool irelative = false;
      for (size_t at = relocations.find(addend); at != std::string::npos; at = relocations.find(addend, at + 1)) {
        irelative |= relocations.rfind("IRELATIV", at) > relocations.rfind('\n', at);
      }
      if (!irelative && lazy.empty()) lazy = name;
    }
  }
  ASSERT_FALSE(lazy.empty()) << "libc has no IFUNC among wcsrchr, strstr without an IRELATIVE slot";

  const XrefRun refused = run_xref({"trace", "--pid", pid_of(target), "--start", "measure", "--functions",
                                    "libc.so.6:" + lazy, "--duration-ms", "20000", "--json"});
  EXPECT_EQ(refused.exit_status, 2) << refused.out << refused.err;
  const auto error = refused.json()["error"];
  EXPECT_EQ(error["code"], "invalid_argument");
  const std::string message = error["message"].get<std::string>() + " " + error["hint"].get<std::string>();
  EXPECT_NE(message.find("GNU IFUNC"), std::string::npos) << message;
  EXPECT_NE(message.find("not called so far"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  if (const std::string debug = debug_file(libc.path); !debug.empty()) {
    size_t named = 0;
    for (const auto& symbol : nm_symbols("", debug)) {
      if (symbol.type != 't' || symbol.name.rfind("__" + lazy + "_", 0) != 0) continue;
      EXPECT_NE(message.find(symbol.name), std::string::npos) << symbol.name << " not offered: " << message;
      ++named;
    }
    EXPECT_GT(named, 0u);
  }

  // Once called, the lazy JUMP_SLOT is bound: the first round is recorded
  // after measure(0) made its calls.
  const RecordFile called_record("lazy-called");
  TargetProcess called(sse2_names_target_command(called_record, {"--call-lazy"}));
  called_record.release();
  ASSERT_EQ(read_calls(called_record.path, 0).at(0).at(lazy), 1u);
  const XrefRun run = run_xref({"trace", "--pid", pid_of(called), "--start", "measure", "--fetch", "round=%di:u64",
                                "--functions", "libc.so.6:" + lazy, "--max-windows", "3", "--duration-ms", "20000",
                                "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 3u);
  EXPECT_TRUE(mentions(document["warnings"], "JUMP_SLOT of " + lazy + " in names_target")) << document["warnings"];
  uint64_t last_round = 0;
  for (const auto& window : document["windows"]) last_round = std::max(last_round, fetched(window["start_fetches"], "round"));
  const auto rounds = read_calls(called_record.path, last_round);
  for (const auto& window : document["windows"]) {
    const uint64_t round = fetched(window["start_fetches"], "round");
    ASSERT_TRUE(rounds.count(round));
    const auto entries = entries_by_symbol(window);
    EXPECT_EQ(entries.count(lazy) ? entries.at(lazy) : 0, rounds.at(round).at(lazy)) << "round " << round;
  }
}

// C++ names as nm -C prints them, with and without the parameter list, at
// any nesting; top-level commas split the list; "lam_f" is lam_f(int), not
// inner::lam_f(int) nor the lambda inside it; the alias the user names is
// the name printed.
TEST(TraceNamesCli, CppNamesMatchNmWithOrWithoutParameters) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("cpp");
  TargetProcess target(names_target_command(record, {}));
  record.release();
  const auto symbols = nm_symbols("-C", XREF_NAMES_TARGET);
  const MappedFile helper = mapped_file(target.pid(), "libnames_helper.so");
  const MappedFile libc = mapped_file(target.pid(), "libc.so");
  const auto libc_dynamic = nm_symbols("-D", libc.path);
  const uint64_t getpid_va = nm_va(libc_dynamic, "getpid@@GLIBC_2.2.5");
  EXPECT_EQ(getpid_va, nm_va(libc_dynamic, "__getpid@@GLIBC_2.2.5")) << "getpid and __getpid are aliases";

  const std::string invoke =
      "std::_Function_handler<int (int), lam_f(int)::{lambda(int)#1}>::_M_invoke(std::_Any_data const&, int&&)";
  const std::string lambda = "lam_f(int)::{lambda(int)#1}::operator()(int) const";
  // Spelling given -> the nm -C name it must resolve to.
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {"std::_Function_handler<int (int), lam_f(int)::{lambda(int)#1}>::_M_invoke", invoke},
      {"lam_f(int)::{lambda(int)#1}::operator()", lambda},
      {"names::twice<int>", "int names::twice<int>(int)"},
      {"double names::twice<double>(double)", "double names::twice<double>(double)"},
      {"inner::lam_f", "inner::lam_f(int)"},
      {"ovl(double)", "ovl(double)"},
  };
  std::string list;
  for (const auto& [spelled, name] : spellings) list += (list.empty() ? "" : ",") + spelled;
  list += ",libnames_helper.so.1:helper_add,libc.so.6:getpid";
  const XrefRun run = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions", list,
                                "--max-windows", "2", "--duration-ms", "20000", "--json"});
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  ASSERT_EQ(document["windows"].size(), 2u);
  for (const auto& window : document["windows"]) {
    EXPECT_EQ(window["start_va"], hex_string(nm_va(symbols, "lam_f(int)")));
    const auto entries = entries_by_symbol(window);
    EXPECT_EQ(entries.at("lam_f(int)"), 1u);
    for (const auto& [spelled, name] : spellings) {
      const nlohmann::json* event = first_entry(window, name);
      ASSERT_NE(event, nullptr) << spelled << " did not resolve to " << name << ": " << window.dump();
      EXPECT_EQ(entries.at(name), 1u) << name;
      EXPECT_EQ((*event)["target_va"], hex_string(nm_va(symbols, name))) << spelled;
    }
    const nlohmann::json* helper_add = first_entry(window, "helper_add");
    ASSERT_NE(helper_add, nullptr);
    EXPECT_EQ((*helper_add)["module"], helper.path.substr(helper.path.rfind('/') + 1));
    EXPECT_EQ((*helper_add)["target_va"], hex_string(nm_va(nm_symbols("-D", helper.path), "helper_add")));
    const nlohmann::json* getpid_event = first_entry(window, "getpid");
    ASSERT_NE(getpid_event, nullptr) << "the name given (getpid) is the name printed";
    EXPECT_EQ((*getpid_event)["target_va"], hex_string(getpid_va));
    EXPECT_EQ(entries.count("__getpid"), 0u);
  }

  // The other alias, named: printed as given.
  const XrefRun alias = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions",
                                  "libc.so.6:__getpid", "--max-windows", "1", "--duration-ms", "20000", "--json"});
  ASSERT_EQ(alias.exit_status, 0) << alias.err;
  const auto alias_document = alias.json();
  const nlohmann::json* event = first_entry(alias_document["windows"][0], "__getpid");
  ASSERT_NE(event, nullptr) << alias.out;
  EXPECT_EQ((*event)["target_va"], hex_string(getpid_va));

  // Text labels drop the parameter list at the top level only.
  const XrefRun text = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions",
                                 "lam_f(int)::{lambda(int)#1}::operator()", "--max-windows", "1", "--duration-ms",
                                 "20000"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("< lam_f(int)::{lambda(int)#1}::operator()\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("> lam_f  from "), std::string::npos) << text.out;
  const XrefRun typed = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions",
                                  "names::twice<int>", "--max-windows", "1", "--duration-ms", "20000"});
  ASSERT_EQ(typed.exit_status, 0) << typed.err;
  // As c++filt -p prints it: no return type either.
  EXPECT_NE(typed.out.find("< names::twice<int>\n"), std::string::npos) << typed.out;
}

// Two functions for one name are refused with both nm -C names and VAs;
// an unknown name or module is refused before anything is attached.
TEST(TraceNamesCli, AmbiguousAndUnknownNamesAreRefused) {
  const RecordFile record("ambiguous");
  TargetProcess target(names_target_command(record, {}));
  record.release();
  const auto symbols = nm_symbols("-C", XREF_NAMES_TARGET);
  const XrefRun ambiguous = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions", "ovl",
                                      "--json"});
  EXPECT_EQ(ambiguous.exit_status, 2);
  const std::string message = ambiguous.json()["error"]["message"];
  for (const std::string name : {"ovl(int)", "ovl(double)"}) {
    EXPECT_NE(message.find(name + " at " + hex_string(nm_va(symbols, name))), std::string::npos) << message;
  }
  const XrefRun unknown = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions",
                                    "libnames_nope.so.1:helper_add", "--json"});
  EXPECT_EQ(unknown.exit_status, 2);
  EXPECT_NE(unknown.json()["error"]["message"].get<std::string>().find("no module named 'libnames_nope.so.1'"),
            std::string::npos);
  const XrefRun missing = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_g", "--json"});
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_NE(missing.json()["error"]["message"].get<std::string>().find("no function named 'lam_g'"),
            std::string::npos);
}

// The library as ldd names it (its soname, a symlink), by file name and by
// path: all one module.
TEST(TraceNamesCli, ModuleBySonameSymlinkFileNameAndPath) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("soname");
  TargetProcess target(names_target_command(record, {}));
  record.release();
  const MappedFile helper = mapped_file(target.pid(), "libnames_helper.so");
  const std::string file_name = helper.path.substr(helper.path.rfind('/') + 1);
  const std::string dynamic = command_output("readelf -d '" + helper.path + "'");
  const size_t soname_at = dynamic.find("Library soname: [");
  ASSERT_NE(soname_at, std::string::npos) << dynamic;
  const std::string soname = dynamic.substr(soname_at + 17, dynamic.find(']', soname_at) - soname_at - 17);
  EXPECT_NE(soname, file_name);
  // ldd prints the soname, which is also a symlink beside the file.
  const std::string ldd = command_output("ldd '" + std::string(XREF_NAMES_TARGET) + "'");
  EXPECT_NE(ldd.find(soname + " => "), std::string::npos) << ldd;
  const std::string symlink = helper.path.substr(0, helper.path.rfind('/') + 1) + "libnames_helper.so";
  struct stat link_status;
  ASSERT_EQ(lstat(symlink.c_str(), &link_status), 0);
  EXPECT_TRUE(S_ISLNK(link_status.st_mode));
  const std::string helper_va = hex_string(nm_va(nm_symbols("-D", helper.path), "helper_add"));

  for (const std::string& module : {soname, std::string("libnames_helper.so"), file_name, helper.path, symlink}) {
    const XrefRun run = run_xref({"trace", "--pid", pid_of(target), "--start", "lam_f", "--functions",
                                  module + ":helper_add", "--max-windows", "1", "--duration-ms", "20000", "--json"});
    ASSERT_EQ(run.exit_status, 0) << module << ": " << run.err;
    const auto document = run.json();
    const nlohmann::json* event = first_entry(document["windows"][0], "helper_add");
    ASSERT_NE(event, nullptr) << module;
    EXPECT_EQ((*event)["module"], file_name) << module;
    EXPECT_EQ((*event)["target_va"], helper_va) << module;
  }
}

// A stripped process named through its unstripped twin: the same build-id,
// another SHA-256 (strip changed the file). The live trace and trace show
// --tree both accept it, say so, and use its names.
TEST(TraceNamesCli, StrippedProcessIsNamedThroughItsUnstrippedTwin) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const std::string twin = XREF_TRACE_TARGET;
  const std::string stripped = twin + "_stripped";
  ASSERT_EQ(build_id(twin), build_id(stripped));
  ASSERT_FALSE(build_id(twin).empty());
  const std::string twin_sha = command_output("sha256sum '" + twin + "'").substr(0, 64);
  ASSERT_NE(twin_sha, command_output("sha256sum '" + stripped + "'").substr(0, 64));
  EXPECT_EQ(command_output("nm '" + stripped + "' 2>&1 || true").find("no symbols") != std::string::npos, true);

  const RecordFile record_file("twin");
  std::vector<std::string> argv = target_command(record_file.path, {});
  argv[0] = stripped;
  TargetProcess target(argv);
  const std::set<std::string> traced = {"handle_request", "validate", "settle"};
  const XrefRun run = run_xref_attached({"trace", "--pid", pid_of(target), "--bin", twin, "--start",
                                         "svc::handle_request", "--functions", "svc::validate,svc::settle", "--fetch",
                                         "id=+0(%di):u64", "--start-filter", "id <= 3", "--max-windows", "3",
                                         "--duration-ms", "20000", "--json"},
                                        record_file.go_file());
  ASSERT_EQ(run.exit_status, 0) << run.err << run.out;
  const auto document = run.json();
  EXPECT_EQ(document["process"]["binary_match"], "build_id_match");
  EXPECT_TRUE(mentions(document["warnings"], "build-id " + build_id(twin) + " is the same")) << document["warnings"];
  ASSERT_EQ(document["windows"].size(), 3u);
  const auto symbols = nm_symbols("-C", twin);
  const auto recorded = await_record(record_file.path, request_keys(document));
  for (const auto& window : document["windows"]) {
    const RequestKey key{window["tid"].get<uint32_t>(), fetched(window["start_fetches"], "id")};
    ASSERT_TRUE(recorded.count(key));
    EXPECT_EQ(window_events(window), expected_events(recorded.at(key), traced)) << "request " << key.second;
    for (const auto& event : window["events"]) {
      EXPECT_EQ(event["target_va"], hex_string(nm_va(symbols, event["symbol"].get<std::string>())))
          << event["symbol"];
    }
  }

  // trace show --tree of that trace with the twin.
  const std::string saved = record_file.path + ".trace.json";
  std::ofstream(saved) << run.out;
  const XrefRun show = run_xref({"trace", "show", saved, "--tree", "--bin", twin, "--json"});
  std::remove(saved.c_str());
  ASSERT_EQ(show.exit_status, 0) << show.err << show.out;
  const auto shown = show.json();
  EXPECT_TRUE(mentions(shown["warnings"], "build-id " + build_id(twin) + " is the same")) << shown["warnings"];
  const auto& tree = shown["data"]["windows"][0]["tree"];
  const std::string root = tree["name"];
  EXPECT_EQ(tree["va"], hex_string(nm_va(symbols, root)));
  EXPECT_EQ(root.rfind("svc::handle_request(", 0), 0u) << root;

  // Another build is still refused.
  const XrefRun other = run_xref({"trace", "--pid", pid_of(target), "--bin", XREF_SAMPLE_SERVICE, "--start",
                                  "svc::handle_request", "--json"});
  EXPECT_EQ(other.exit_status, 7);
  EXPECT_EQ(other.json()["error"]["code"], "binary_mismatch");
}

}  // namespace
}  // namespace xref::test

namespace xref::test {
namespace {

// --callees-of and --all-calls-in work in a library, not only the
// executable: helper_tree(n) in libnames_helper calls helper_leaf n times
// (a direct call inside the library) and tail-jumps to helper_add through
// the library's PLT. Each window must hold exactly n calls of helper_leaf,
// at helper_tree's call site, and one [tail] entry of helper_add, for an n
// the target recorded.
TEST(TraceNamesCli, CallSiteModesWorkInALibrary) {
  XREF_REQUIRE(bpf_usable(), "root for BPF");
  const RecordFile record("library-tree");
  TargetProcess target(names_target_command(record, {}));
  record.release();
  const MappedFile helper = mapped_file(target.pid(), "libnames_helper.so");
  const std::string module = helper.path.substr(helper.path.rfind('/') + 1);
  const auto symbols = nm_symbols("", helper.path);
  const std::string tree_va = hex_string(nm_va(symbols, "helper_tree"));
  for (const char* mode : {"--callees-of", "--all-calls-in"}) {
    const XrefRun run =
        run_xref({"trace", "--pid", pid_of(target), "--start", "libnames_helper.so.1:helper_tree", mode,
                  "libnames_helper.so.1:helper_tree", "--fetch", "n=%di:u32", "--max-windows", "8", "--duration-ms",
                  "20000", "--json"});
    ASSERT_EQ(run.exit_status, 0) << mode << ": " << run.err;
    const auto document = run.json();
    ASSERT_EQ(document["windows"].size(), 8u) << mode;
    std::set<uint64_t> seen_n;
    for (const auto& window : document["windows"]) {
      EXPECT_EQ(window["status"], "complete") << mode;
      EXPECT_EQ(window["start_module"], module) << mode;
      EXPECT_EQ(window["start_va"], tree_va) << mode;
      const uint64_t n = std::stoull(window["start_fetches"][0]["value"].get<std::string>(), nullptr, 16);
      seen_n.insert(n);
      uint64_t leaves = 0, tails = 0;
      for (const auto& event : window["events"]) {
        if (event["kind"] != "entry" || event.value("window_begin", false) || event["seq"] == 0) continue;
        const std::string symbol = event["symbol"];
        // Calls are one level down; the tail jump hands the start frame
        // (depth 0) itself to helper_add.
        EXPECT_EQ(event["depth"], event["tail_call"] == true ? 0 : 1) << mode << " " << symbol;
        EXPECT_EQ(event["module"], module) << mode << " " << symbol;
        EXPECT_EQ(event["call_site_module"], module) << mode << " " << symbol;
        EXPECT_EQ(event["caller"], "helper_tree") << mode << " " << symbol;
        if (symbol == "helper_leaf") ++leaves;
        if (symbol.rfind("helper_add", 0) == 0 && event["tail_call"] == true) ++tails;
      }
      EXPECT_EQ(leaves, n) << mode << ": window " << window["window_id"];
      EXPECT_EQ(tails, 1u) << mode << ": window " << window["window_id"];
    }
    // The target's own record says which n it called helper_tree with.
    const auto rounds = read_calls(record.path, 3);
    std::set<uint64_t> recorded_n;
    for (const auto& [round, calls] : rounds) recorded_n.insert(calls.at("tree"));
    for (uint64_t n : seen_n) EXPECT_TRUE(recorded_n.count(n)) << mode << ": n " << n << " never recorded";
    EXPECT_GE(seen_n.size(), 2u) << mode;
  }
}

}  // namespace
}  // namespace xref::test
