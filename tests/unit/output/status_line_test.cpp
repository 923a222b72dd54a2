// The status line's words and numbers, and that it stays silent where
// stderr is not a terminal (the terminal itself: tests/e2e, on a pty).
#include "output/status_line.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>

namespace xref {
namespace {

TEST(StatusLine, Numbers) {
  EXPECT_EQ(grouped_number(0), "0");
  EXPECT_EQ(grouped_number(999), "999");
  EXPECT_EQ(grouped_number(1000), "1,000");
  EXPECT_EQ(grouped_number(3201), "3,201");
  EXPECT_EQ(grouped_number(1234567), "1,234,567");
  EXPECT_EQ(status_seconds(12449), "12.4 s");
  EXPECT_EQ(status_seconds(0), "0.0 s");
}

TEST(StatusLine, WhatEndsTheRun) {
  EXPECT_EQ(status_stop_text(0, {}), "(Ctrl-C to stop)");
  EXPECT_EQ(status_stop_text(1000, {}), "(stops at 1.0 s or Ctrl-C)");
  EXPECT_EQ(status_stop_text(30000, {"100 windows"}), "(stops at 30.0 s, 100 windows or Ctrl-C)");
  EXPECT_EQ(status_stop_text(0, {"100 windows"}), "(stops at 100 windows or Ctrl-C)");
}

TEST(StatusLine, RateOverTheLastSecond) {
  RecentRate rate;
  EXPECT_EQ(rate.per_second(), 0);
  rate.add(250, 500);  // from the start
  EXPECT_DOUBLE_EQ(rate.per_second(), 2000);
  rate.add(500, 1000);
  EXPECT_DOUBLE_EQ(rate.per_second(), 2000);
  // A burst long ago no longer counts once a second has passed.
  rate.add(1500, 1000);
  rate.add(2500, 1100);
  EXPECT_DOUBLE_EQ(rate.per_second(), 100);
}

TEST(StatusLine, NeverOnAFile) {
  FILE* file = tmpfile();
  ASSERT_NE(file, nullptr);
  StatusLine status(fileno(file), true);
  EXPECT_FALSE(status.active());
  status.show("xref: 1.0 s");
  status.stop();
  EXPECT_EQ(ftell(file), 0);
  fseek(file, 0, SEEK_END);
  EXPECT_EQ(ftell(file), 0);
  fclose(file);
}

}  // namespace
}  // namespace xref
