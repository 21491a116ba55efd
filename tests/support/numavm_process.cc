#include "tests/support/numavm_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace numavm::testing {
namespace {

// A new directory under the system's temporary directory ($TMPDIR).
std::string MakeTempDir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  return mkdtemp(pattern.data());
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

namespace {

// Starts `numavm args...` with stdout and stderr to files in `dir`.
pid_t Spawn(const std::string& program, const std::vector<std::string>& args,
            const std::string& dir) {
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<std::string> argv_storage = {program};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

}  // namespace

BackgroundNumavm::BackgroundNumavm(const std::vector<std::string>& args)
    : dir_(MakeTempDir("numavm-bg")) {
  pid_ = Spawn(NUMAVM_BINARY, args, dir_);
}

BackgroundNumavm::~BackgroundNumavm() {
  if (pid_ > 0 && !done_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  std::filesystem::remove_all(dir_);
}

void BackgroundNumavm::Signal(int sig) {
  if (pid_ > 0 && !done_) kill(pid_, sig);
}

std::string BackgroundNumavm::err() const { return ReadAll(dir_ + "/err"); }

ProcessResult BackgroundNumavm::Wait(int timeout_seconds) {
  ProcessResult result;
  if (pid_ <= 0) return result;
  int status = status_;
  for (int i = 0; i < timeout_seconds * 20 && !done_; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      done_ = true;
      break;
    }
    usleep(50000);
  }
  if (!done_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    done_ = true;
    result.timed_out = true;
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  result.out = ReadAll(dir_ + "/out");
  result.err = ReadAll(dir_ + "/err");
  return result;
}

bool BackgroundNumavm::running() {
  if (pid_ <= 0 || done_) return false;
  if (waitpid(pid_, &status_, WNOHANG) != pid_) return true;
  done_ = true;  // reaped: Wait reports status_
  return false;
}

ProcessResult RunNumavm(const std::vector<std::string>& args) {
  return RunProgram(NUMAVM_BINARY, args);
}

ProcessResult RunProgram(const std::string& program, const std::vector<std::string>& args) {
  const std::string dir = MakeTempDir("numavm-test");
  ProcessResult result;
  const pid_t pid = Spawn(program, args, dir);
  if (pid > 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  }
  result.out = ReadAll(dir + "/out");
  result.err = ReadAll(dir + "/err");
  std::filesystem::remove_all(dir);
  return result;
}

bool KvmAvailable() { return access("/dev/kvm", R_OK | W_OK) == 0; }

namespace {

// Runs `command` through the shell; its output, and whether it exited 0.
std::string Shell(const std::string& command, bool* ok) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) {
    *ok = false;
    return "could not run: " + command;
  }
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), p)) > 0;) out.append(buffer, n);
  const int status = pclose(p);
  *ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return out;
}

}  // namespace

std::string PrometheusLintProblems(const std::string& exposition) {
  bool ok = false;
  const std::string build = std::filesystem::path(NUMAVM_BINARY).parent_path().string();
  std::string tool = Shell(
      std::string("BUILD_DIR=") + build + " " + NUMAVM_SOURCE_DIR + "/scripts/fetch-promtool.sh",
      &ok);
  while (!tool.empty() && (tool.back() == '\n' || tool.back() == ' ')) tool.pop_back();
  if (!ok) return "no promtool: " + tool;
  TempFile metrics("metrics.txt", exposition);
  const std::string out = Shell(tool + " check metrics < " + metrics.path(), &ok);
  return ok && out.empty() ? "" : (out.empty() ? "promtool failed" : out);
}

std::string ReportSchemaProblems(const std::string& json) {
  TempFile report("report.json", json);
  const std::string command = std::string("python3 ") + NUMAVM_SOURCE_DIR +
                              "/tests/cli/validate_report.py " + report.path() + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return "could not run tests/cli/validate_report.py";
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), p)) > 0;) out.append(buffer, n);
  const int status = pclose(p);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return out.empty() ? "validate_report.py failed" : out;
}

int CountLines(const std::string& text) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) ++n;
  }
  return n;
}

TempFile::TempFile(const std::string& name, const std::string& contents)
    : TempFile(name, std::vector<unsigned char>(contents.begin(), contents.end())) {}

TempFile::TempFile(const std::string& name, const std::vector<unsigned char>& contents) {
  dir_ = MakeTempDir("numavm-file");
  path_ = dir_ + "/" + name;
  std::ofstream out(path_, std::ios::binary);
  out.write(reinterpret_cast<const char*>(contents.data()),
            static_cast<std::streamsize>(contents.size()));
}

TempFile::~TempFile() { std::filesystem::remove_all(dir_); }

std::string PayloadPath(const std::string& name) {
  return std::string(NUMAVM_PAYLOAD_DIR) + "/" + name + ".elf";
}

namespace {
constexpr const char* kNrHugePages = "/proc/sys/vm/nr_hugepages";

long ReadLong(const std::string& path) {
  std::ifstream in(path);
  long v = -1;
  in >> v;
  return v;
}

uint64_t FreeHugePages() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  while (in >> key) {
    if (key == "HugePages_Free:") {
      in >> value;
      return value;
    }
  }
  return 0;
}
}  // namespace

HugePageReservation::HugePageReservation(uint64_t pages) {
  if (FreeHugePages() >= pages) {
    ok_ = true;
    return;
  }
  long old = ReadLong(kNrHugePages);
  if (old < 0) return;
  {
    std::ofstream out(kNrHugePages);
    out << old + static_cast<long>(pages);
  }
  restore_ = old;
  ok_ = FreeHugePages() >= pages;
}

HugePageReservation::~HugePageReservation() {
  if (restore_ >= 0) {
    std::ofstream out(kNrHugePages);
    out << restore_;
  }
}

}  // namespace numavm::testing
