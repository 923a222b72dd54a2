// The plugin's LLDB-free parts: helper command lines and the protocol
// client (its line framing is shared/json_lines, tested in
// tests/unit/serve/serve_protocol_test.cpp) against tests/lldb/fake_helper.py.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "helper_client.h"
#include "helper_process.h"

namespace xref::lldb_plugin {
namespace {

using namespace std::chrono_literals;

TEST(HelperCommandLine, SplitsWordsWithQuotesAndEscapes) {
  EXPECT_EQ(*split_command_line("sudo -n /usr/local/bin/xref serve"),
            (std::vector<std::string>{"sudo", "-n", "/usr/local/bin/xref", "serve"}));
  EXPECT_EQ(*split_command_line("  '/opt/my tools/xref'  \"ser\\\"ve\" a\\ b "),
            (std::vector<std::string>{"/opt/my tools/xref", "ser\"ve", "a b"}));
  EXPECT_EQ(*split_command_line("x ''"), (std::vector<std::string>{"x", ""}));
  EXPECT_FALSE(split_command_line("xref 'serve").has_value());
}

TEST(HelperCommandLine, DefaultIsNextToThePluginThenTheBuildTreeThenInstalledThenPath) {
  const std::filesystem::path root = std::filesystem::temp_directory_path() / ("xref-lldb-" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "lldb-plugin");
  std::filesystem::create_directories(root / "helper");
  std::filesystem::create_directories(root / "bin");
  const std::string plugin = (root / "lldb-plugin" / "libxref_lldb.so").string();
  const std::string installed = (root / "bin" / "xref").string();
  auto make_executable = [](const std::filesystem::path& path) {
    std::ofstream(path) << "#!/bin/sh\n";
    chmod(path.c_str(), 0755);
  };
  EXPECT_EQ(default_helper_command(plugin, installed).argv, (std::vector<std::string>{"xref", "serve"}));
  make_executable(installed);
  EXPECT_EQ(default_helper_command(plugin, installed).argv, (std::vector<std::string>{installed, "serve"}));
  // An installed plugin (its directory has no helper) finds the installed helper.
  EXPECT_EQ(default_helper_command("/nonexistent/lib/xref/lldb/libxref_lldb.so", installed).argv,
            (std::vector<std::string>{installed, "serve"}));
  make_executable(root / "helper" / "xref");
  EXPECT_EQ(default_helper_command(plugin, installed).argv,
            (std::vector<std::string>{(root / "helper" / "xref").string(), "serve"}));
  make_executable(root / "lldb-plugin" / "xref");
  EXPECT_EQ(default_helper_command(plugin, installed).argv,
            (std::vector<std::string>{(root / "lldb-plugin" / "xref").string(), "serve"}));
  std::filesystem::remove_all(root);
}

TEST(HelperCommandLine, TheInstalledHelperIsTheConfiguredBinDir) {
  EXPECT_EQ(std::string(kInstalledHelper), XREF_TEST_INSTALLED_HELPER);
}

TEST(HelperProcess, DescribesHowItEnded) {
  EXPECT_EQ(describe_wait_status(3 << 8), "exited with status 3");
  EXPECT_EQ(describe_wait_status(SIGKILL), "was killed by signal 9 (SIGKILL)");
}

// The protocol client against the scripted helper.
HelperCommand fake_helper() { return {{XREF_FAKE_HELPER}}; }

TEST(HelperClient, HandshakeAndRequests) {
  std::string error;
  auto client = HelperClient::start(fake_helper(), "test", 10s, error);
  ASSERT_NE(client, nullptr) << error;
  EXPECT_EQ(client->tool_version(), "0.2.0-fake");
  HelperReply reply = client->request("run", {{"argv", {"doctor"}}}, 10s);
  ASSERT_TRUE(reply.ok) << reply.message;
  EXPECT_EQ(reply.result["text"], nlohmann::json::array({"bpf_load  ok  fake"}));
  reply = client->request("no.such.method", nlohmann::json::object(), 10s);
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.code, "unknown_method");
  // A notification's answer is dropped; the next request gets its own.
  client->notify("resumed", {{"pid", getpid()}});
  reply = client->request("run", {{"argv", {"sessions"}}}, 10s);
  ASSERT_TRUE(reply.ok) << reply.message;
  EXPECT_EQ(reply.result["text"], nlohmann::json::array());
  client->close(5s);
  EXPECT_EQ(client->ending(), "exited with status 0");  // stdin closed: the helper ends by itself
}

TEST(HelperClient, AMissingHelperIsOneClearError) {
  std::string error;
  auto client = HelperClient::start({{"/nonexistent/xref", "serve"}}, "test", 10s, error);
  EXPECT_EQ(client, nullptr);
  EXPECT_EQ(error, "cannot start the helper '/nonexistent/xref serve': No such file or directory; set it with "
                   "`xref helper PATH` (or XREF_HELPER)");
}

TEST(HelperClient, AProtocolVersionMismatchIsRefused) {
  setenv("FAKE_HELPER_PROTOCOL", "1", 1);
  std::string error;
  auto client = HelperClient::start(fake_helper(), "test", 10s, error);
  unsetenv("FAKE_HELPER_PROTOCOL");
  EXPECT_EQ(client, nullptr);
  EXPECT_NE(error.find("speaks protocol 1, this plugin speaks protocol 2"), std::string::npos) << error;
}

TEST(HelperClient, AHelperThatDiesBeforeTheHandshakeIsReportedWithItsLastWords) {
  std::string error;
  auto client = HelperClient::start({{"/bin/sh", "-c", "echo 'sudo: a password is required' >&2; exit 1"}}, "test", 10s,
                                    error);
  EXPECT_EQ(client, nullptr);
  EXPECT_NE(error.find("exited with status 1 before the handshake: sudo: a password is required"), std::string::npos)
      << error;
}

TEST(HelperClient, APendingRequestFailsWhenTheHelperIsKilled) {
  std::string error;
  auto client = HelperClient::start(fake_helper(), "test", 10s, error);
  ASSERT_NE(client, nullptr) << error;
  std::thread killer([pid = client->pid()] {
    std::this_thread::sleep_for(200ms);
    kill(pid, SIGKILL);
  });
  const auto started = std::chrono::steady_clock::now();
  const HelperReply reply = client->request("test.never_answers", nlohmann::json::object(), 60s);
  killer.join();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_FALSE(reply.ok);
  EXPECT_EQ(reply.code, "helper_exited");
  EXPECT_NE(reply.message.find("was killed by signal 9 (SIGKILL)"), std::string::npos) << reply.message;
  EXPECT_FALSE(client->alive());
  // Later requests fail at once, no SIGPIPE.
  EXPECT_EQ(client->request("sessions", nlohmann::json::object(), 10s).code, "helper_exited");
}

}  // namespace
}  // namespace xref::lldb_plugin
