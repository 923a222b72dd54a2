// A small profile built in code over names chosen for the picture tests
// (folded, SVG, pprof): two threads, an executable and libc, a C++ name, a
// name with a ';', an incomplete stack, a kernel sample and an address no
// symbol covers. Its counts are the ground truth the tests read back.
#pragma once

#include "xprof/profile.h"

namespace xref::test {

inline Profile example_profile() {
  Profile profile;
  profile.process = {{"pid", 4242}, {"comm", "app"}, {"exe_path", "/opt/app/bin/app"}};
  profile.capture.event = "cpu-clock";
  profile.capture.frequency_hz = 99;
  profile.capture.period_ns = 10101010;
  profile.capture.callers = "dwarf";
  profile.capture.duration_ns = 10'000'000'000;
  profile.capture.started_unix_ns = 1'800'000'000'000'000'000;
  profile.modules = {
      {"/usr/lib/x86_64-linux-gnu/libc.so.6", "00112233445566778899aabbccddeeff00112233", 0x7f0000000000,
       {{0x7f0000028000, 0x7f000017d000, 0x28000}}, "loaded", 100, ""},
      {"/opt/app/bin/app", "aabbccddeeff00112233445566778899aabbccdd", 0x555555554000,
       {{0x555555555000, 0x555555556000, 0x1000}}, "loaded", 20, ""},
  };
  profile.functions = {
      {1, "main", "main", 0x1100, 0x40},                                      // 0
      {1, "worker", "worker", 0x1140, 0x40},                                  // 1
      {1, "leaf_a", "leaf_a", 0x1180, 0x40},                                  // 2
      {1, "leaf_b", "leaf_b", 0x11c0, 0x40},                                  // 3
      {1, "std::vector<int, std::allocator<int> >::push_back(int const&)",    // 4
       "_ZNSt6vectorIiSaIiEE9push_backERKi", 0x1200, 0x40},
      {1, "odd;name", "odd;name", 0x1240, 0x40},                              // 5
      {0, "memcpy", "memcpy", 0x2a000, 0x100},                                // 6
  };
  profile.locations = {
      {1, 0x1110, true, 0},          // 0 main, return address
      {1, 0x1150, true, 1},          // 1 worker, return address
      {1, 0x1190, false, 2},         // 2 leaf_a
      {1, 0x11d0, false, 3},         // 3 leaf_b
      {1, 0x11e0, false, 3},         // 4 leaf_b, another pc
      {0, 0x2a010, false, 6},        // 5 memcpy
      {1, 0x1250, false, 5},         // 6 odd;name
      {0, 0x30000, false, std::nullopt},  // 7 libc, no symbol
      {1, 0x1210, false, 4},         // 8 push_back
  };
  profile.stacks = {
      {{2, 1, 0}, StackEnd::complete, false},  // 0 main;worker;leaf_a
      {{3, 1, 0}, StackEnd::complete, false},  // 1 main;worker;leaf_b
      {{4, 1, 0}, StackEnd::complete, false},  // 2 main;worker;leaf_b (same path as 1)
      {{2}, StackEnd::no_cfi, false},          // 3 [incomplete: no_cfi];leaf_a
      {{5, 1, 0}, StackEnd::complete, true},   // 4 main;worker;memcpy;[kernel]
      {{6, 0}, StackEnd::complete, false},     // 5 main;odd;name
      {{7, 0}, StackEnd::complete, false},     // 6 main;libc.so.6+0x30000
      {{8, 1, 0}, StackEnd::complete, false},  // 7 main;worker;push_back
  };
  profile.samples = {
      {0, 101, 500}, {0, 102, 100}, {1, 101, 300}, {2, 102, 50}, {3, 101, 20},
      {4, 102, 30},  {5, 101, 10},  {6, 101, 5},   {7, 102, 3},
  };
  profile.threads = {{101, "app", 835, 8'434'343'350, false, false},
                     {102, "worker-1", 183, 1'848'484'830, false, false}};
  return profile;
}

}  // namespace xref::test
