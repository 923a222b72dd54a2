// trace show: hand-written windows of the calls fixture (tests/fixtures/
// calls.c) matched against its static callee tree; VAs and call sites come
// from nm and objdump. Also the window text shape and bad input.
#include "trace/saved/show.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "file_digest.h"
#include "objdump_listing.h"

namespace xref {
namespace {

using test::fixture_path;

// The fixture's functions and call instructions, as nm and objdump see them.
class Fixture {
 public:
  Fixture() : path_(fixture_path("calls_pie")), listing_(path_), symbols_(test::nm_symbols(path_)) {}

  const std::string& path() const { return path_; }
  uint64_t start(const std::string& name) const {
    if (auto header = listing_.symbol(name)) return *header;  // also "puts@plt"
    return test::nm_symbol(symbols_, name).start;
  }
  std::string va(const std::string& name) const { return hex(start(name)); }

  // The call or jmp in `caller` whose target objdump names `callee`
  // (nullopt `callee`: its first indirect call).
  std::string site(const std::string& caller, const std::optional<std::string>& callee) const {
    const test::NmSymbol symbol = test::nm_symbol(symbols_, caller);
    for (const auto& instruction : listing_.in_range(symbol.start, symbol.start + symbol.size)) {
      if (!instruction.is_call() && !instruction.is_jump()) continue;
      if (callee ? instruction.target_symbol() == *callee : instruction.indirect()) return hex(instruction.address);
    }
    throw std::runtime_error("no call to " + callee.value_or("*") + " in " + caller);
  }

  static std::string hex(uint64_t value) {
    std::ostringstream text;
    text << "0x" << std::hex << value;
    return text.str();
  }

 private:
  std::string path_;
  test::ObjdumpListing listing_;
  std::vector<test::NmSymbol> symbols_;
};

// Writes a window's events in the live_trace window schema.
class WindowWriter {
 public:
  explicit WindowWriter(const Fixture& fixture) : fixture_(fixture) {}

  // An entry of `callee` called from `caller` (at its call to `callee`, or
  // to `through` when that differs: an indirect site or a tail jump).
  WindowWriter& entry(int depth, const std::string& callee, const std::string& caller,
                      const std::optional<std::string>& through = std::string(),
                      const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json event = {{"kind", "entry"}, {"depth", depth}, {"target_va", fixture_.va(callee)},
                            {"symbol", callee}, {"fetches", nlohmann::json::array()}};
    if (!caller.empty()) {
      event["call_site_va"] = fixture_.site(caller, through && through->empty() ? callee : through);
    }
    event.update(extra);
    return add(std::move(event));
  }
  WindowWriter& exit(int depth, const std::string& function, const std::string& kind = "return") {
    return add({{"kind", kind}, {"depth", depth}, {"target_va", fixture_.va(function)}, {"symbol", function}});
  }
  WindowWriter& raw(nlohmann::json event) { return add(std::move(event)); }

  nlohmann::json window(const std::string& start, uint64_t id = 1) const {
    return {{"window_id", id}, {"tid", 77}, {"start_va", fixture_.va(start)}, {"status", "complete"},
            {"stop_va", fixture_.va(start)}, {"events", events_}};
  }

 private:
  WindowWriter& add(nlohmann::json event) {
    event["seq"] = events_.size();
    events_.push_back(std::move(event));
    return *this;
  }

  const Fixture& fixture_;
  nlohmann::json events_ = nlohmann::json::array();
};

// The node reached from the root by these names ("[indirect]" for a site).
const ShowNode* node_at(const WindowTree& tree, const std::vector<std::string>& path) {
  int index = 0;
  for (const std::string& name : path) {
    int next = -1;
    for (int child : tree.nodes[static_cast<size_t>(index)].children) {
      if (tree.nodes[static_cast<size_t>(child)].name == name) next = child;
    }
    if (next < 0) return nullptr;
    index = next;
  }
  return &tree.nodes[static_cast<size_t>(index)];
}

class TraceShowTree : public ::testing::Test {
 protected:
  void SetUp() override {
    auto image = ElfImage::open(fixture_.path());
    ASSERT_TRUE(image) << image.error().message;
    image_ = std::make_shared<ElfImage>(std::move(*image));
  }

  WindowTree tree_of(const nlohmann::json& window, int depth, const TracedProbes& traced = {}) {
    auto tree = window_tree(*image_, window, depth, traced);
    if (!tree) throw std::runtime_error(tree.error().message);
    return std::move(*tree);
  }

  // tree_root as call-site mode reports it: chain_a > chain_b > chain_c,
  // indirect_caller's indirect call reaching chain_c, recurse(2) > recurse >
  // recurse, say > puts@plt, then tree_root's and tail_caller's tail jumps
  // at depth 0. ping is never called.
  nlohmann::json tree_root_window() {
    WindowWriter writer(fixture_);
    writer.entry(0, "tree_root", "")
        .entry(1, "chain_a", "tree_root").entry(2, "chain_b", "chain_a").entry(3, "chain_c", "chain_b")
        .exit(3, "chain_c").exit(2, "chain_b").exit(1, "chain_a")
        .entry(1, "indirect_caller", "tree_root")
        .entry(2, "chain_c", "indirect_caller", std::nullopt, {{"indirect", true}})
        .exit(2, "chain_c").exit(1, "indirect_caller")
        .entry(1, "recurse", "tree_root").entry(2, "recurse", "recurse").entry(3, "recurse", "recurse")
        .exit(3, "recurse").exit(2, "recurse").exit(1, "recurse")
        .entry(1, "say", "tree_root").entry(2, "puts@plt", "say").exit(2, "puts@plt").exit(1, "say")
        .entry(0, "tail_caller", "tree_root", "tail_caller", {{"tail_call", true}})
        .entry(0, "tail_target", "tail_caller", "tail_target", {{"tail_call", true}})
        .exit(0, "tail_target");
    return writer.window("tree_root");
  }

  Fixture fixture_;
  std::shared_ptr<ElfImage> image_;
};

TEST_F(TraceShowTree, CountsEachCalleeUnderItsCaller) {
  const WindowTree tree = tree_of(tree_root_window(), 3);
  ASSERT_FALSE(tree.nodes.empty());
  EXPECT_EQ(tree.nodes[0].name, "tree_root");
  EXPECT_EQ(tree.nodes[0].calls, 1u);
  const ShowNode* chain_c = node_at(tree, {"chain_a", "chain_b", "chain_c"});
  ASSERT_NE(chain_c, nullptr);
  EXPECT_EQ(chain_c->calls, 1u);
  EXPECT_EQ(chain_c->calls_by_site,
            (std::map<uint64_t, uint64_t>{{std::stoull(fixture_.site("chain_b", "chain_c"), nullptr, 16), 1}}));
  const ShowNode* say = node_at(tree, {"say", "puts@plt"});
  ASSERT_NE(say, nullptr);
  EXPECT_EQ(say->state, NodeState::external);
  EXPECT_EQ(say->calls, 1u);
  EXPECT_EQ(tree.calls_below_depth, 0u);
  EXPECT_EQ(tree.calls_outside_root, 0u);
}

TEST_F(TraceShowTree, MarksStaticCalleesThatWereNotCalled) {
  const WindowTree tree = tree_of(tree_root_window(), 3);
  const ShowNode* ping = node_at(tree, {"ping"});
  ASSERT_NE(ping, nullptr);
  EXPECT_EQ(ping->calls, 0u);
  EXPECT_EQ(ping->sites, std::vector<uint64_t>{std::stoull(fixture_.site("tree_root", "ping"), nullptr, 16)});
  const ShowNode* pong = node_at(tree, {"ping", "pong"});
  ASSERT_NE(pong, nullptr);
  EXPECT_EQ(pong->calls, 0u);
  // Every other static callee of tree_root was called.
  for (int child : tree.nodes[0].children) {
    const ShowNode& node = tree.nodes[static_cast<size_t>(child)];
    if (node.kind == ShowNodeKind::function && node.name != "ping") {
      EXPECT_GT(node.calls, 0u) << node.name;
    }
  }
}

TEST_F(TraceShowTree, RecursionIsMarkedAndCountedNotFollowed) {
  const WindowTree tree = tree_of(tree_root_window(), 8);
  const ShowNode* recurse = node_at(tree, {"recurse"});
  const ShowNode* again = node_at(tree, {"recurse", "recurse"});
  ASSERT_NE(recurse, nullptr);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(recurse->calls, 1u);
  EXPECT_EQ(again->state, NodeState::recursive);
  EXPECT_EQ(again->calls, 2u);  // both deeper levels
  EXPECT_TRUE(again->children.empty());
  // ping > pong > ping stops at the second ping, however deep the tree.
  const ShowNode* ping_again = node_at(tree, {"ping", "pong", "ping"});
  ASSERT_NE(ping_again, nullptr);
  EXPECT_EQ(ping_again->state, NodeState::recursive);
  EXPECT_TRUE(ping_again->children.empty());
}

TEST_F(TraceShowTree, IndirectSiteHoldsTheTargetsSeenThere) {
  const WindowTree tree = tree_of(tree_root_window(), 3);
  const ShowNode* site = node_at(tree, {"indirect_caller", "[indirect]"});
  ASSERT_NE(site, nullptr);
  EXPECT_EQ(site->kind, ShowNodeKind::indirect_site);
  EXPECT_EQ(site->sites, std::vector<uint64_t>{std::stoull(fixture_.site("indirect_caller", std::nullopt), nullptr, 16)});
  EXPECT_EQ(site->calls, 1u);
  const ShowNode* target = node_at(tree, {"indirect_caller", "[indirect]", "chain_c"});
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->kind, ShowNodeKind::observed);
  EXPECT_EQ(target->va, fixture_.start("chain_c"));
  EXPECT_EQ(target->calls, 1u);
}

TEST_F(TraceShowTree, TailJumpsAreCalleesOfTheJumpingFunction) {
  const WindowTree tree = tree_of(tree_root_window(), 3);
  const ShowNode* tail_caller = node_at(tree, {"tail_caller"});
  const ShowNode* tail_target = node_at(tree, {"tail_caller", "tail_target"});
  ASSERT_NE(tail_caller, nullptr);
  ASSERT_NE(tail_target, nullptr);
  EXPECT_TRUE(tail_caller->tail);
  EXPECT_EQ(tail_caller->calls, 1u);
  EXPECT_TRUE(tail_target->tail);
  EXPECT_EQ(tail_target->calls, 1u);
}

// --functions mode: a tail jump is the jumping function's tail_exit, then
// the target's entry at the same depth.
TEST_F(TraceShowTree, TailExitThenEntryIsTheTailCall) {
  WindowWriter writer(fixture_);
  writer.entry(0, "tail_caller", "").exit(0, "tail_caller", "tail_exit").entry(0, "tail_target", "")
      .exit(0, "tail_target");
  const WindowTree tree = tree_of(writer.window("tail_caller"), 1);
  const ShowNode* target = node_at(tree, {"tail_target"});
  ASSERT_NE(target, nullptr);
  EXPECT_EQ(target->calls, 1u);
  EXPECT_EQ(tree.calls_outside_root, 0u);
}

TEST_F(TraceShowTree, CallsTheStaticTreeDoesNotHaveAreListed) {
  WindowWriter writer(fixture_);
  writer.entry(0, "chain_b", "")
      .raw({{"kind", "entry"}, {"depth", 1}, {"target_va", fixture_.va("leaf_add")}, {"symbol", "leaf_add"},
            {"call_site_va", fixture_.site("chain_b", "chain_c")}})
      .exit(1, "leaf_add")
      .raw({{"kind", "entry"}, {"depth", 1}, {"target_va", "0x10a2a0"}, {"symbol", "gettid"}, {"module", "libc.so.6"}})
      .raw({{"kind", "return"}, {"depth", 1}, {"target_va", "0x10a2a0"}, {"symbol", "gettid"}, {"module", "libc.so.6"}});
  const WindowTree tree = tree_of(writer.window("chain_b"), 1);
  const ShowNode* leaf = node_at(tree, {"leaf_add"});
  ASSERT_NE(leaf, nullptr);
  EXPECT_EQ(leaf->kind, ShowNodeKind::observed);
  EXPECT_FALSE(leaf->in_static_tree());
  EXPECT_EQ(leaf->calls, 1u);
  const ShowNode* gettid = node_at(tree, {"gettid"});
  ASSERT_NE(gettid, nullptr);
  EXPECT_EQ(gettid->module, "libc.so.6");
  const ShowNode* chain_c = node_at(tree, {"chain_c"});
  ASSERT_NE(chain_c, nullptr);
  EXPECT_EQ(chain_c->calls, 0u);
}

// A call into libc seen at its entry (--functions libc.so.6:puts) is the
// call through the binary's PLT stub.
TEST_F(TraceShowTree, AnotherModulesFunctionMatchesItsPltStub) {
  WindowWriter writer(fixture_);
  writer.entry(0, "say", "")
      .raw({{"kind", "entry"}, {"depth", 1}, {"target_va", "0x87bd0"}, {"symbol", "puts"}, {"module", "libc.so.6"}})
      .raw({{"kind", "return"}, {"depth", 1}, {"target_va", "0x87bd0"}, {"symbol", "puts"}, {"module", "libc.so.6"}});
  const WindowTree tree = tree_of(writer.window("say"), 1);
  const ShowNode* puts = node_at(tree, {"puts@plt"});
  ASSERT_NE(puts, nullptr);
  EXPECT_EQ(puts->calls, 1u);
  EXPECT_EQ(tree.nodes[0].children.size(), 1u);
}

TEST_F(TraceShowTree, DepthCutsTheTreeAndCountsWhatLiesBelow) {
  const WindowTree tree = tree_of(tree_root_window(), 1);
  ASSERT_NE(node_at(tree, {"chain_a"}), nullptr);
  EXPECT_EQ(node_at(tree, {"chain_a", "chain_b"}), nullptr);
  EXPECT_EQ(node_at(tree, {"chain_a"})->state, NodeState::depth_limit);
  // chain_b, chain_c, the indirect chain_c, recurse twice, puts@plt, and
  // tail_target (tail_caller's callee, though at depth 0 in the window).
  EXPECT_EQ(tree.calls_below_depth, 7u);
  EXPECT_EQ(reached_depth(tree_root_window()), 3);
}

// A split-off part's calls are its function's: cold_split.cold's abort@plt
// is a callee of cold_split.
TEST_F(TraceShowTree, ColdPartCallsBelongToTheirFunction) {
  WindowWriter writer(fixture_);
  writer.entry(0, "cold_split", "").entry(1, "abort@plt", "cold_split.cold");
  const WindowTree tree = tree_of(writer.window("cold_split"), 1);
  const ShowNode* abort = node_at(tree, {"abort@plt"});
  ASSERT_NE(abort, nullptr);
  EXPECT_EQ(abort->kind, ShowNodeKind::function);
  EXPECT_EQ(abort->calls, 1u);
  EXPECT_EQ(node_at(tree, {"cold_split.cold"}), nullptr);
}

// With summary.traced, a callee at a site the trace did not probe is not
// traced rather than not called; a call seen below an untraced callee is
// matched through it.
TEST_F(TraceShowTree, UntracedSitesAreNotTracedAndSeenThrough) {
  TracedProbes traced;
  traced.known = true;
  for (const char* callee : {"chain_a", "indirect_caller", "recurse", "ping", "say"}) {
    traced.call_sites.insert(std::stoull(fixture_.site("tree_root", std::string(callee)), nullptr, 16));
  }
  traced.call_sites.insert(std::stoull(fixture_.site("chain_b", "chain_c"), nullptr, 16));
  WindowWriter writer(fixture_);
  writer.entry(0, "tree_root", "").entry(1, "chain_a", "tree_root").entry(2, "chain_c", "chain_b")
      .exit(2, "chain_c").exit(1, "chain_a").exit(0, "tree_root");
  const WindowTree tree = tree_of(writer.window("tree_root"), 3, traced);
  EXPECT_TRUE(tree.traced_known);
  const ShowNode* chain_b = node_at(tree, {"chain_a", "chain_b"});
  ASSERT_NE(chain_b, nullptr);
  EXPECT_EQ(chain_b->traced, false);
  EXPECT_EQ(chain_b->calls, 0u);
  const ShowNode* chain_c = node_at(tree, {"chain_a", "chain_b", "chain_c"});
  ASSERT_NE(chain_c, nullptr);
  EXPECT_EQ(chain_c->calls, 1u);
  const ShowNode* ping = node_at(tree, {"ping"});
  ASSERT_NE(ping, nullptr);
  EXPECT_EQ(ping->traced, true);
  EXPECT_EQ(ping->calls, 0u);
}

TEST_F(TraceShowTree, TextMarksWhatWasNotCalled) {
  const nlohmann::json window = tree_root_window();
  const WindowTree tree = tree_of(window, 3);
  std::ostringstream text;
  print_window_tree(text, window, tree);
  const std::string out = text.str();
  auto line_with = [&](const std::string& needle) {
    std::istringstream lines(out);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find(needle) != std::string::npos) return line;
    }
    return std::string();
  };
  EXPECT_EQ(out.rfind("window 1  thread 77  complete  ", 0), 0u) << out;
  EXPECT_EQ(line_with(" ping "), "    " + fixture_.va("ping") + " ping  (not called)  @" +
                                     fixture_.site("tree_root", std::string("ping")));
  EXPECT_EQ(line_with(" chain_a "), "    " + fixture_.va("chain_a") + " chain_a  called 1  @" +
                                        fixture_.site("tree_root", std::string("chain_a")));
  EXPECT_NE(line_with("recurse [recursive]  called 2").find("      "), std::string::npos) << out;
  EXPECT_NE(line_with("[indirect] call").find("called 1"), std::string::npos) << out;
  EXPECT_NE(line_with(" tail_caller [tail]").find("called 1"), std::string::npos) << out;
  EXPECT_NE(line_with("tree depth 3: ").find("not called"), std::string::npos) << out;
}

TEST_F(TraceShowTree, JsonHasCalledFlagsAndCounts) {
  const nlohmann::json window = tree_root_window();
  const nlohmann::json json = window_tree_json(window, tree_of(window, 3));
  EXPECT_EQ(json["window_id"], 1);
  EXPECT_EQ(json["root_va"], fixture_.va("tree_root"));
  EXPECT_EQ(json["depth"], 3);
  const nlohmann::json& root = json["tree"];
  EXPECT_EQ(root["name"], "tree_root");
  bool ping_seen = false;
  for (const auto& child : root["children"]) {
    if (child["name"] != "ping") continue;
    ping_seen = true;
    EXPECT_EQ(child["called"], false);
    EXPECT_EQ(child["calls"], 0);
    EXPECT_EQ(child["in_static_tree"], true);
    EXPECT_EQ(child["static_sites"], nlohmann::json::array({fixture_.site("tree_root", std::string("ping"))}));
    EXPECT_EQ(child["edge"], "call");
  }
  EXPECT_TRUE(ping_seen);
  EXPECT_EQ(json["counts"]["not_called"].get<uint64_t>() + json["counts"]["called"].get<uint64_t>() +
                json["counts"]["not_traced"].get<uint64_t>(),
            json["counts"]["static_callees"].get<uint64_t>());
  EXPECT_EQ(json["counts"]["indirect_targets"], 1);
}

TEST_F(TraceShowTree, StartThatIsNoFunctionIsRefused) {
  WindowWriter writer(fixture_);
  nlohmann::json window = writer.entry(0, "chain_a", "").window("chain_a");
  const std::string inside = Fixture::hex(fixture_.start("chain_a") + 1);
  window["start_va"] = inside;
  window["events"][0]["target_va"] = inside;
  auto tree = window_tree(*image_, window, 1, {});
  ASSERT_FALSE(tree);
  EXPECT_EQ(tree.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(tree.error().message.find("start VA " + inside + " is no function"), std::string::npos)
      << tree.error().message;
}

// --- the binary --------------------------------------------------------------

nlohmann::json identity_of(const std::string& path) {
  auto image = ElfImage::open(path);
  auto digest = sha256_file(path);
  return {{"exe_path", path}, {"build_id", image ? image->build_id() : ""}, {"exe_sha256", digest ? *digest : ""}};
}

TEST(TraceShowBinary, AcceptsTheTracedBuildOnly) {
  std::vector<std::string> warnings;
  const std::string traced = fixture_path("calls_pie");
  EXPECT_TRUE(open_traced_binary(identity_of(traced), "", warnings));
  EXPECT_TRUE(open_traced_binary(identity_of(traced), traced, warnings));
  EXPECT_TRUE(warnings.empty());

  auto other = open_traced_binary(identity_of(traced), fixture_path("calls_nopie"), warnings);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().code, ErrorCode::invalid_argument);
  EXPECT_NE(other.error().message.find("is not the traced build"), std::string::npos);
  EXPECT_NE(other.error().hint.find("--bin"), std::string::npos);

  // The same build-id with other bytes (stripped): the same build, said in a warning.
  nlohmann::json identity = identity_of(traced);
  auto stripped = open_traced_binary(identity, fixture_path("calls_pie_stripped"), warnings);
  ASSERT_TRUE(stripped);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("SHA-256 differs"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("build-id " + identity["build_id"].get<std::string>() + " is the same"),
            std::string::npos)
      << warnings[0];

  // Without a recorded build-id, the SHA-256 tells them apart.
  identity.erase("build_id");
  warnings.clear();
  auto unidentified = open_traced_binary(identity, fixture_path("calls_pie_stripped"), warnings);
  ASSERT_FALSE(unidentified);
  EXPECT_NE(unidentified.error().message.find("SHA-256"), std::string::npos) << unidentified.error().message;
}

TEST(TraceShowBinary, MissingBinarySaysWhatToDo) {
  std::vector<std::string> warnings;
  nlohmann::json identity = identity_of(fixture_path("calls_pie"));
  identity["exe_path"] = "/nonexistent/calls_pie";
  auto missing = open_traced_binary(identity, "", warnings);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::file_error);
  EXPECT_NE(missing.error().message.find("/nonexistent/calls_pie"), std::string::npos);
  EXPECT_NE(missing.error().hint.find("pass --bin"), std::string::npos);

  auto unnamed = open_traced_binary(nlohmann::json(), "", warnings);
  ASSERT_FALSE(unnamed);
  EXPECT_EQ(unnamed.error().code, ErrorCode::invalid_argument);

  // No identity recorded (a JSONL file without its summary): used with a warning.
  EXPECT_TRUE(open_traced_binary(nlohmann::json(), fixture_path("calls_pie"), warnings));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("unchecked"), std::string::npos);
}

// --- windows and bad input ---------------------------------------------------

TraceFile file_with(std::vector<nlohmann::json> windows) {
  TraceFile file;
  file.windows = std::move(windows);
  return file;
}

nlohmann::json small_window(uint64_t id) {
  const nlohmann::json entry = {{"kind", "entry"}, {"depth", 0}, {"target_va", "0x10"}, {"symbol", "f"}};
  return {{"window_id", id}, {"start_va", "0x10"}, {"events", nlohmann::json::array({entry})}};
}

TEST(TraceShowWindows, SelectsOneWindowOrAll) {
  const TraceFile file = file_with({small_window(1), small_window(2), small_window(3)});
  auto all = select_windows(file, std::nullopt);
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 3u);
  auto second = select_windows(file, 2);
  ASSERT_TRUE(second);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0]["window_id"], 2);
  auto missing = select_windows(file, 9);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::invalid_argument);
  EXPECT_EQ(missing.error().message, "the trace has no window 9");
  EXPECT_EQ(missing.error().hint, "its windows are 1, 2, 3");
}

TEST(TraceShowWindows, MalformedWindowsAreRefusedWithWhere) {
  auto message_for = [](const nlohmann::json& window) {
    auto selected = select_windows(file_with({window}), std::nullopt);
    EXPECT_FALSE(selected);
    if (selected) return std::string();
    EXPECT_EQ(selected.error().code, ErrorCode::invalid_argument);
    return selected.error().message;
  };
  EXPECT_EQ(message_for(42), "window #1 of the file: not an object");
  nlohmann::json window = small_window(4);
  window.erase("events");
  EXPECT_EQ(message_for(window), "window 4: it has no events list");
  window = small_window(4);
  window["events"][0]["depth"] = "deep";
  EXPECT_EQ(message_for(window), "window 4, event 0: depth is not a number from 0 to 65535");
  window = small_window(4);
  window["events"][0]["kind"] = "jump";
  EXPECT_EQ(message_for(window), "window 4, event 0: kind is not one of entry, return, tail_exit, unwound, stop");
  window = small_window(4);
  window["events"][0]["target_va"] = "0xzz";
  EXPECT_EQ(message_for(window), "window 4, event 0: target_va is not a hex VA");
  // A saved :string fetch is bounded: no string longer than 256 bytes can
  // say (U+FFFD for each byte at worst), no length past the bound.
  window = small_window(4);
  window["events"][0]["fetches"] = {{{"name", "key"}, {"string", std::string(769, 'x')}, {"length", 256},
                                     {"truncated", true}, {"type", "string[256]"}}};
  EXPECT_EQ(message_for(window), "window 4, event 0: a fetched string is not a string of at most 256 characters");
  window["events"][0]["fetches"][0]["string"] = "set";
  window["events"][0]["fetches"][0]["length"] = 257;
  EXPECT_EQ(message_for(window), "window 4, event 0: a fetched string's length is not a number from 0 to 256");
  window = small_window(4);
  window["start_fetches"] = {{{"name", "key"}, {"string", "set"}, {"length", 3}, {"truncated", "no"}}};
  EXPECT_EQ(message_for(window), "window 4: a fetched string's truncated is not true or false");
  window = small_window(4);
  window["window_id"] = "one";
  EXPECT_EQ(message_for(window), "window #1 of the file: window_id is not a number");
}

TEST(TraceShowWindows, TracedProbesComeFromTheSummary) {
  EXPECT_FALSE(traced_probes(nlohmann::json()).known);
  EXPECT_FALSE(traced_probes(nlohmann::json{{"windows", 1}}).known);
  const TracedProbes traced = traced_probes(
      {{"traced", {{"mode", "callees_of"}, {"call_sites", {"0x1c60", "0x1cb4"}}, {"functions", {"0x1c30"}}}}});
  EXPECT_TRUE(traced.known);
  EXPECT_EQ(traced.call_sites, (std::set<uint64_t>{0x1c60, 0x1cb4}));
  EXPECT_EQ(traced.functions, (std::set<uint64_t>{0x1c30}));
}

}  // namespace
}  // namespace xref
