// Runs a program to completion for tests, capturing stdout and stderr.
#pragma once

#include <string>
#include <vector>

namespace stockade::testing {

struct ProcessResult {
  int exitCode = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs argv[0] (looked up in PATH when it has no slash) with `input` on stdin.
ProcessResult runProcess(const std::vector<std::string>& argv, const std::string& input = "");

// The stockade CLI built beside the tests.
std::string stockadeBinary();

}  // namespace stockade::testing
