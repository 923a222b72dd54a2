// A stream (std::cout, std::cerr) pointed at a string while a command run
// in process prints (serve's one-shot commands, profile report/annotate/diff).
#pragma once

#include <ostream>
#include <sstream>
#include <string>

namespace xref::serve {

class Captured {
 public:
  explicit Captured(std::ostream& stream) : stream_(stream), previous_(stream.rdbuf(text_.rdbuf())) {}
  ~Captured() { stream_.rdbuf(previous_); }
  Captured(const Captured&) = delete;
  Captured& operator=(const Captured&) = delete;
  std::string text() const { return text_.str(); }

 private:
  std::ostream& stream_;
  std::ostringstream text_;
  std::streambuf* previous_;
};

}  // namespace xref::serve
