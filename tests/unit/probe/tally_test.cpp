// ProbeTally, the tracefs backend's port of probe.bpf.c's counting: a full
// group map counts each hit it has no room for, and a hit whose key could
// not be read is counted as unread, so every passing hit a key was asked of
// is in exactly one place, as in BPF.
#include "probe/tracefs/tally.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "fetch_spec.h"

namespace xref {
namespace {

// A plan of one site of this test process (the tally only reads the sites,
// fetches and filter), grouped as `group` asks.
struct OneSitePlan {
  explicit OneSitePlan(uint8_t group) {
    auto opened = open_target({getpid(), ""});
    if (!opened) throw std::runtime_error(opened.error().message);
    target = std::make_unique<Target>(std::move(*opened));
    auto modules = ProbeModules::of_process(*target);
    if (!modules) throw std::runtime_error(modules.error().message);
    plan = std::make_unique<ProbePlan>(ProbePlan{std::move(*modules), {}, {}, {}, std::nullopt, std::nullopt,
                                                 "i", 0, "", 0, {}, {}, {}});
    auto fetches = parse_fetch_spec("i=%di:u64");
    if (!fetches) throw std::runtime_error(fetches.error().message);
    plan->fetches = *fetches;
    ProbeSite site;
    std::memset(&site.compiled, 0, sizeof site.compiled);
    site.compiled.group = group;
    site.compiled.group_slot = 0;
    site.compiled.hist_slot = XREF_NO_SLOT;
    site.compiled.caller = group == XREF_GROUP_CALLER ? XREF_CALLER_AT_SP : XREF_CALLER_NONE;
    site.compiled.fetch_count = 1;
    plan->sites.push_back(site);
  }
  std::unique_ptr<Target> target;
  std::unique_ptr<ProbePlan> plan;
};

SiteHit hit_with(uint64_t value, uint64_t return_address) {
  SiteHit hit;
  hit.tid = 7;
  hit.fetch_count = 1;
  hit.values[0] = value;
  hit.return_address = return_address;
  return hit;
}

const ProbeRecordSink kNoSamples = [](ProbeRecord&&) {};

TEST(ProbeTally, AFullGroupMapCountsTheHitsItHasNoRoomFor) {
  OneSitePlan one(XREF_GROUP_FETCH);
  ProbeTally tally(*one.plan, {1, 1, 0, 0});
  constexpr uint64_t kExtra = 464;
  const uint64_t calls = XREF_PROBE_MAX_GROUPS + kExtra;
  for (uint64_t i = 0; i < calls; ++i) tally.hit(hit_with(i, 0), kNoSamples);
  // Keys already in the map still count when it is full.
  for (uint64_t i = 0; i < 10; ++i) tally.hit(hit_with(i, 0), kNoSamples);

  const ProbeCounts& counts = tally.counts();
  EXPECT_EQ(counts.sites[0].passed, calls + 10);
  ASSERT_EQ(counts.groups.at(0).size(), XREF_PROBE_MAX_GROUPS);
  uint64_t counted = 0;
  for (const auto& [key, hits] : counts.groups.at(0)) counted += hits;
  EXPECT_EQ(counted, XREF_PROBE_MAX_GROUPS + 10);
  EXPECT_EQ(counts.sites[0].groups_full, kExtra);
  EXPECT_EQ(counted + counts.sites[0].groups_full, counts.sites[0].passed);
  EXPECT_EQ(counts.sites[0].groups_unread, 0u);
}

TEST(ProbeTally, AHitWhoseCallerWasNotReadIsCountedAsUnread) {
  OneSitePlan one(XREF_GROUP_CALLER);
  ProbeTally tally(*one.plan, {1, 1, 0, 0});
  tally.hit(hit_with(1, 0x401000), kNoSamples);
  tally.hit(hit_with(2, 0), kNoSamples);
  tally.hit(hit_with(3, 0x401000), kNoSamples);
  const ProbeCounts& counts = tally.counts();
  EXPECT_EQ(counts.groups.at(0).at(0x401000), 2u);
  EXPECT_EQ(counts.sites[0].groups_unread, 1u);
  EXPECT_EQ(counts.sites[0].caller_unread, 1u);
  EXPECT_EQ(counts.sites[0].groups_full, 0u);
}

}  // namespace
}  // namespace xref
