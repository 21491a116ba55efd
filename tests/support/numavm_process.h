// Runs the numavm binary as a user would and captures what it prints.
#ifndef NUMAVM_TESTS_SUPPORT_NUMAVM_PROCESS_H_
#define NUMAVM_TESTS_SUPPORT_NUMAVM_PROCESS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace numavm::testing {

struct ProcessResult {
  int exit_code = -1;   // -1: did not exit normally
  int term_signal = 0;  // the signal that ended it, if any
  std::string out;
  std::string err;
  bool timed_out = false;  // killed by Wait after its timeout
};

// `numavm args...` started in the background (attach, daemon); killed
// (SIGKILL, by pid) when destroyed if still running.
class BackgroundNumavm {
 public:
  explicit BackgroundNumavm(const std::vector<std::string>& args);
  ~BackgroundNumavm();
  int pid() const { return pid_; }
  void Signal(int sig);
  bool running();
  std::string err() const;  // stderr so far
  ProcessResult Wait(int timeout_seconds);

 private:
  std::string dir_;
  int pid_ = -1;
  bool done_ = false;
  int status_ = 0;  // of a process that running() reaped
};

// Runs `numavm args...` (the binary built with the tests) and waits.
ProcessResult RunNumavm(const std::vector<std::string>& args);
// Runs `program args...` (a path) the same way and waits.
ProcessResult RunProgram(const std::string& program, const std::vector<std::string>& args);

// True when /dev/kvm can be opened read-write.
bool KvmAvailable();

// Problems of a JSON report against docs/report-schema.json, one per line
// (tests/cli/validate_report.py); empty if it validates.
std::string ReportSchemaProblems(const std::string& json);

// What `promtool check metrics` (Prometheus' linter, fetched by
// scripts/fetch-promtool.sh) says of a Prometheus exposition; empty if it
// is clean.
std::string PrometheusLintProblems(const std::string& exposition);

// Number of lines in `text` that are not empty.
int CountLines(const std::string& text);

// A file in a fresh temporary directory, removed with the object.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& contents);
  TempFile(const std::string& name, const std::vector<unsigned char>& contents);
  ~TempFile();
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

std::string PayloadPath(const std::string& name);

// Makes sure `pages` 2 MiB huge pages are free, raising vm.nr_hugepages if
// needed (root only), and puts the old value back when destroyed.
class HugePageReservation {
 public:
  explicit HugePageReservation(uint64_t pages);
  ~HugePageReservation();
  bool ok() const { return ok_; }

 private:
  bool ok_ = false;
  long restore_ = -1;
};

}  // namespace numavm::testing

#endif  // NUMAVM_TESTS_SUPPORT_NUMAVM_PROCESS_H_
