// SourceTexts: lines of the files DWARF names, for annotate --source.
#include "xprof/source_text.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace xref {
namespace {

TEST(SourceTexts, LinesAreTheFilesOwnOneBasedWithoutNewlines) {
  const std::string path = "/tmp/xref-source-text-" + std::to_string(getpid()) + ".c";
  {
    std::ofstream out(path);
    out << "int main(void) {\r\n\treturn 0;\n}";
  }
  SourceTexts texts;
  EXPECT_EQ(texts.line(path, 1), "int main(void) {");
  EXPECT_EQ(texts.line(path, 2), "\treturn 0;");
  EXPECT_EQ(texts.line(path, 3), "}");
  EXPECT_EQ(texts.line(path, 4), std::nullopt);
  EXPECT_EQ(texts.line(path, 0), std::nullopt);
  EXPECT_TRUE(texts.unreadable().empty());
  std::remove(path.c_str());
}

TEST(SourceTexts, AFileThatCannotBeReadIsReportedOnce) {
  SourceTexts texts;
  EXPECT_EQ(texts.line("/nonexistent/xref/a.c", 3), std::nullopt);
  EXPECT_EQ(texts.line("/nonexistent/xref/a.c", 4), std::nullopt);
  EXPECT_EQ(texts.line("/proc", 1), std::nullopt);
  ASSERT_EQ(texts.unreadable().size(), 2u);
  EXPECT_EQ(texts.unreadable()[0], "/nonexistent/xref/a.c: No such file or directory");
  EXPECT_EQ(texts.unreadable()[1], "/proc: not a regular file");
}

}  // namespace
}  // namespace xref
