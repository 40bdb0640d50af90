// Compiles the seccomp denial table (seccomp.h, seccompRules()) into a BPF
// program with libseccomp. Used by the build (tools/seccomp_filter_gen.cc
// embeds the result in the library) and by the test that checks the embedded
// filter is the table compiled now; never on the spawn path.
#pragma once

#include <linux/filter.h>

#include <string>
#include <variant>
#include <vector>

#include "platform/linux/seccomp.h"

namespace stockade::platform {

// The x86_64 number of a syscall, also for calls this libseccomp predates; -1
// when unknown.
int resolveSyscall(const char* name);

// The error string names the libseccomp call that failed.
std::variant<std::vector<sock_filter>, std::string> compileSeccompFilter(const SeccompOptions& options);

}  // namespace stockade::platform
