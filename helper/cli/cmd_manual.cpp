// The commands that write xref's manual from its own CLI11 app:
//   xref _generate man DIR [--doc-dir D]   every man page into DIR (the build does this)
//   xref _generate bash-completion FILE    the completion script into FILE
//   xref _complete functions --pid N --prefix P   function names, for the script
//   xref completion bash                   the script on stdout
// The first two are hidden (CLI11 group ""): they are for the build and the
// script, not for people.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>

#include "cli/command_line.h"
#include "command/option_values.h"
#include "input/user_files.h"
#include "output/report.h"
#include "serve/helper_names.h"

namespace xref {
namespace {

constexpr const char* kDefaultDocDir = "/usr/share/doc/xref";

Result<void> write_file(const std::string& path, const std::string& text) {
  auto file = open_user_file(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!file) return file.error();
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(file->get(), text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return make_error(ErrorCode::file_error, path + ": " + std::strerror(errno), "check the disk and the directory");
    }
    written += static_cast<size_t>(n);
  }
  return {};
}

Result<void> make_directory(const std::string& dir) {
  for (size_t slash = 1; slash <= dir.size(); ++slash) {
    if (slash < dir.size() && dir[slash] != '/') continue;
    const std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      return make_error(ErrorCode::file_error, part + ": " + std::strerror(errno), "give a directory xref may create");
    }
  }
  return {};
}

// Pages of commands that are gone would be installed with the others.
void remove_other_pages(const std::string& dir, const std::set<std::string>& kept) {
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
  if (!listing) return;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    const bool page = name.rfind("xref", 0) == 0 && name.size() > 2 && name.compare(name.size() - 2, 2, ".1") == 0;
    if (page && kept.count(name) == 0) ::unlinkat(::dirfd(listing.get()), name.c_str(), 0);
  }
}

Result<void> write_man_pages(CLI::App& app, const std::string& dir, const std::string& doc_dir) {
  if (auto made = make_directory(dir); !made) return made;
  std::set<std::string> written;
  for (const manual::ManPage& page : manual::man_pages(manual::command_tree(app), manual_site(doc_dir))) {
    if (auto wrote = write_file(dir + "/" + page.file_name, page.text); !wrote) return wrote;
    written.insert(page.file_name);
  }
  remove_other_pages(dir, written);
  return {};
}

std::string completion_script(CLI::App& app) {
  return manual::bash_completion(manual::command_tree(app), completion_site());
}

int finish(const Result<void>& result) {
  if (result) return 0;
  Envelope envelope;
  envelope.operation = "usage";
  envelope.error = result.error();
  return report({false}, envelope, nullptr);
}

}  // namespace

void setup_manual_commands(CLI::App& app, int& exit_status) {
  CLI::App* generate = app.add_subcommand("_generate", "write xref's man pages or completion script")->group("");
  generate->require_subcommand(1);
  auto dir = std::make_shared<std::string>();
  auto doc_dir = std::make_shared<std::string>(kDefaultDocDir);
  CLI::App* man = generate->add_subcommand("man", "write every man page (xref.1, xref-COMMAND.1, ...) into DIR");
  man->add_option("dir", *dir, "the directory, made if missing")->type_name("DIR")->required();
  man->add_option("--doc-dir", *doc_dir, "where the guides are installed, for SEE ALSO")->capture_default_str();
  man->callback([&app, dir, doc_dir, &exit_status] { exit_status = finish(write_man_pages(app, *dir, *doc_dir)); });
  auto file = std::make_shared<std::string>();
  CLI::App* bash = generate->add_subcommand("bash-completion", "write the bash completion script into FILE");
  bash->add_option("file", *file, "the script's file")->type_name("FILE")->required();
  bash->callback([&app, file, &exit_status] { exit_status = finish(write_file(*file, completion_script(app))); });

  CLI::App* complete = app.add_subcommand("_complete", "candidates for the completion script")->group("");
  complete->require_subcommand(1);
  auto pid = std::make_shared<int>(0);
  auto prefix = std::make_shared<std::string>();
  CLI::App* functions =
      complete->add_subcommand("functions", "function names of a process starting with --prefix, one a line");
  functions->add_option("--pid,-p", *pid, "the process")
      ->required()
      ->transform(number_in({1, kMaxPid}));
  functions->add_option("--prefix", *prefix, "what is typed so far (module: picks a module)");
  functions->callback([pid, prefix, &exit_status] {
    for (const std::string& name : serve::function_candidates(*pid, *prefix)) std::cout << name << '\n';
    exit_status = 0;
  });

  auto shell = std::make_shared<std::string>();
  CLI::App* completion = app.add_subcommand(
      "completion", "print the Tab completion script for a shell: `source <(xref completion bash)`, or save it "
                    "as bash-completion's completions/xref");
  completion->add_option("shell", *shell, "the shell")->required()->check(one_of({"bash"}));
  completion->callback([&app, shell, &exit_status] {  // holds `shell` while CLI11 writes it
    std::cout << completion_script(app);
    exit_status = 0;
  });
}

}  // namespace xref
