// The protection of this process's mapping that holds an address, as
// /proc/self/maps shows it ("rw-p", "---p"; empty if none holds it): what
// the tests of code that changes guest memory's protection check.
#ifndef NUMAVM_TESTS_SUPPORT_PROC_MAPS_H_
#define NUMAVM_TESTS_SUPPORT_PROC_MAPS_H_

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace numavm::testing {

inline std::string ProtectionAt(const void* at) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(at);
  while (std::getline(maps, line)) {
    uintptr_t lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) == 3 && a >= lo && a < hi) {
      return perms;
    }
  }
  return "";
}

}  // namespace numavm::testing

#endif  // NUMAVM_TESTS_SUPPORT_PROC_MAPS_H_
