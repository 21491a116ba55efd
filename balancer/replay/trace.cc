#include "balancer/replay/trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/errno_status.h"
#include "base/read_file.h"

namespace numavm {
namespace {

constexpr absl::string_view kMagic = "numavm-trace 1";

absl::Status LineError(absl::string_view source, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ":", line, ": ", what));
}

absl::Status ParseHeader(absl::string_view line, TraceHeader& h, absl::string_view source, int n) {
  bool have_vcpus = false, have_pages = false;
  for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    if (field == "vm") continue;
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
    uint64_t value = 0;
    if (kv.first == "vcpus") {
      if (!absl::SimpleAtoi(kv.second, &value) || value == 0 || value > 255) {
        return LineError(source, n, absl::StrCat("vcpus must be 1-255, not '", kv.second, "'"));
      }
      h.vcpus = static_cast<int>(value);
      have_vcpus = true;
    } else if (kv.first == "pages") {
      if (!absl::SimpleAtoi(kv.second, &value) || value == 0 || value > kMaxTracePages) {
        return LineError(source, n,
                         absl::StrCat("bad page count '", kv.second, "' (want 1-", kMaxTracePages,
                                      ", a guest of at most 1 TiB)"));
      }
      h.pages = value;
      have_pages = true;
    } else if (kv.first == "period_us") {
      if (!absl::SimpleAtoi(kv.second, &value) || value == 0) {
        return LineError(source, n, absl::StrCat("bad period '", kv.second, "'"));
      }
      h.period = absl::Microseconds(value);
    } else if (kv.first == "payload") {
      h.payload = std::string(kv.second);
    } else if (kv.first == "sampler") {
      h.sampler = std::string(kv.second);
    } else {
      return LineError(source, n, absl::StrCat("unknown field '", kv.first, "'"));
    }
  }
  if (!have_vcpus || !have_pages)
    return LineError(source, n, "the vm line needs vcpus= and pages=");
  return absl::OkStatus();
}

absl::Status ParsePeriod(absl::string_view line, const TraceHeader& h, TracePeriod& p,
                         absl::string_view source, int n) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
  int64_t us = 0;
  if (fields.size() < 2 || !absl::SimpleAtoi(fields[1], &us) || us < 0) {
    return LineError(source, n, "a period line is 'b TIME_US SAMPLES...'");
  }
  p.at = absl::Microseconds(us);
  p.samples.reserve(fields.size() - 2);
  for (size_t i = 2; i < fields.size(); ++i) {
    std::vector<absl::string_view> parts = absl::StrSplit(fields[i], '.');
    uint64_t gfn = 0;
    int vcpu = 0;
    if (parts.size() != 3 || !absl::SimpleHexAtoi(parts[0], &gfn) ||
        !absl::SimpleAtoi(parts[1], &vcpu) || (parts[2] != "r" && parts[2] != "w")) {
      return LineError(source, n, absl::StrCat("bad sample '", fields[i], "' (want gfn.vcpu.r|w)"));
    }
    if (gfn >= h.pages) {
      return LineError(
          source, n,
          absl::StrCat("gfn 0x", absl::Hex(gfn), " is outside the ", h.pages, " guest pages"));
    }
    if (vcpu < kUnknownVcpu || vcpu >= h.vcpus) {
      return LineError(source, n, absl::StrCat("vCPU ", vcpu, " does not exist"));
    }
    p.samples.push_back(
        AccessSample{gfn, vcpu, parts[2] == "r" ? AccessKind::kRead : AccessKind::kWrite, p.at});
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t AccessTrace::sample_count() const {
  uint64_t n = 0;
  for (const TracePeriod& p : periods) n += p.samples.size();
  return n;
}

std::string FormatTraceHeader(const TraceHeader& h) {
  std::string out = absl::StrCat(kMagic, "\nvm vcpus=", h.vcpus, " pages=", h.pages,
                                 " period_us=", absl::ToInt64Microseconds(h.period));
  if (!h.payload.empty()) absl::StrAppend(&out, " payload=", h.payload);
  if (!h.sampler.empty()) absl::StrAppend(&out, " sampler=", h.sampler);
  absl::StrAppend(&out, "\n");
  return out;
}

std::string FormatTracePeriod(absl::Duration at, const AccessBatch& batch) {
  std::string out = absl::StrCat("b ", absl::ToInt64Microseconds(at));
  for (const AccessSample& s : batch) {
    absl::StrAppend(&out, " ", absl::Hex(s.gfn), ".", s.vcpu, ".",
                    s.kind == AccessKind::kRead ? "r" : "w");
  }
  absl::StrAppend(&out, "\n");
  return out;
}

absl::StatusOr<AccessTrace> ParseTrace(absl::string_view text, absl::string_view source) {
  AccessTrace trace;
  int n = 0;
  bool have_magic = false, have_header = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++n;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    if (!have_magic) {
      if (line != kMagic) {
        return LineError(source, n, absl::StrCat("not a numavm trace (want '", kMagic, "')"));
      }
      have_magic = true;
    } else if (absl::StartsWith(line, "vm ")) {
      if (have_header) return LineError(source, n, "a second vm line");
      if (absl::Status s = ParseHeader(line, trace.header, source, n); !s.ok()) return s;
      have_header = true;
    } else if (absl::StartsWith(line, "b ")) {
      if (!have_header) return LineError(source, n, "a period before the vm line");
      TracePeriod p;
      if (absl::Status s = ParsePeriod(line, trace.header, p, source, n); !s.ok()) return s;
      trace.periods.push_back(std::move(p));
    } else {
      return LineError(source, n, absl::StrCat("unexpected line '", line.substr(0, 40), "'"));
    }
  }
  if (!have_header) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no vm line (empty or truncated trace)"));
  }
  return trace;
}

absl::StatusOr<AccessTrace> ReadTraceFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, "trace", kMaxTraceFileBytes);
  if (!text.ok()) return text.status();
  return ParseTrace(*text, path);
}

absl::StatusOr<TraceWriter> TraceWriter::Create(const std::string& path,
                                                const TraceHeader& header) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return ErrnoStatus(errno, absl::StrCat("cannot create trace ", path));
  }
  TraceWriter writer(f);
  const std::string text = FormatTraceHeader(header);
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
    return ErrnoStatus(errno, absl::StrCat("cannot write trace ", path));
  }
  return writer;
}

TraceWriter::~TraceWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void TraceWriter::Append(absl::Duration at, const AccessBatch& batch) {
  if (file_ == nullptr || !status_.ok()) return;
  const std::string line = FormatTracePeriod(at, batch);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()) {
    status_ = ErrnoStatus(errno, "trace write failed");
  }
}

absl::Status TraceWriter::Close() {
  if (file_ == nullptr) return status_;
  if (std::fclose(file_) != 0 && status_.ok()) {
    status_ = ErrnoStatus(errno, "trace close failed");
  }
  file_ = nullptr;
  return status_;
}

}  // namespace numavm
