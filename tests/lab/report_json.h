// Reading a numavm run report (JSON) without ever inserting into it or
// calling operator[] on a const document for a key it lacks (undefined
// behaviour in nlohmann::json): what the lab's parser and table share.
#ifndef NUMAVM_TESTS_LAB_REPORT_JSON_H_
#define NUMAVM_TESTS_LAB_REPORT_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace numavm::lab {

// j[key] when j is an object that has it, else null.
inline const nlohmann::json& Member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

inline std::optional<double> Number(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  return std::nullopt;
}

// j[key] as a count, 0 when it is absent or not one.
inline uint64_t Count(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = Member(j, key);
  return v.is_number_unsigned() ? v.get<uint64_t>() : uint64_t{0};
}

// A placement sample taken while every vCPU still ran: once one has ended
// (node -1) the "declared memory on its vCPUs' nodes" of the rest is not
// the VM's, and a vCPU left alone can look perfectly placed.
inline bool AllVcpusRunning(const nlohmann::json& sample) {
  const nlohmann::json& nodes = Member(sample, "vcpu_nodes");
  if (!nodes.is_array()) return true;
  for (const auto& n : nodes) {
    if (!n.is_number_integer() || n.get<int>() < 0) return false;
  }
  return true;
}

}  // namespace numavm::lab

#endif  // NUMAVM_TESTS_LAB_REPORT_JSON_H_
