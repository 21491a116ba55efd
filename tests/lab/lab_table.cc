// Prints the NUMA lab's comparison table from console logs:
//   lab_table LOG...
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/lab/lab_results.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: lab_table CONSOLE_LOG...\n");
    return 2;
  }
  std::vector<numavm::lab::LabRun> all;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::fprintf(stderr, "lab_table: cannot open %s\n", argv[i]);
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    for (auto& r : numavm::lab::ParseLabLog(ss.str())) all.push_back(std::move(r));
  }
  std::cout << numavm::lab::LabTable(all);
  return all.empty() ? 1 : 0;
}
