// The shape of every bad-input answer: one line on stderr naming the
// problem, exit 2, no crash, nothing on stdout.
#ifndef NUMAVM_TESTS_SUPPORT_EXPECT_BAD_INPUT_H_
#define NUMAVM_TESTS_SUPPORT_EXPECT_BAD_INPUT_H_

#include <gtest/gtest.h>

#include <string>

#include "tests/support/numavm_process.h"

namespace numavm::testing {

inline void ExpectBadInput(const ProcessResult& r, const std::string& needle) {
  EXPECT_EQ(r.term_signal, 0) << "numavm died from a signal";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace numavm::testing

#endif  // NUMAVM_TESTS_SUPPORT_EXPECT_BAD_INPUT_H_
