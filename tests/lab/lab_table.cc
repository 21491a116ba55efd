// Prints the NUMA lab's comparison table from console logs, and with
// --plot DIR writes one convergence plot per workload and node count:
//   lab_table [--plot DIR] LOG...
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "tests/lab/lab_results.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: lab_table CONSOLE_LOG...\n");
    return 2;
  }
  std::vector<numavm::lab::LabRun> all;
  std::string plot_dir;
  int first = 1;
  if (argc > 2 && std::string(argv[1]) == "--plot") {
    plot_dir = argv[2];
    first = 3;
  }
  for (int i = first; i < argc; ++i) {
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
  if (!plot_dir.empty()) {
    for (const auto& [name, svg] : numavm::lab::LabPlots(all)) {
      std::ofstream(plot_dir + "/" + name) << svg;
    }
  }
  return all.empty() ? 1 : 0;
}
