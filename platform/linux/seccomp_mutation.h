// Mutation testing of the seccomp table (platform/mutation.h, scripts/mutate):
// in a build with STOCKADE_MUTATION_TESTING, each row of the table belongs to
// one layer, and seccompRules() leaves out the rows of the layer that
// STOCKADE_MUTATE names. The filter of such a run is compiled when first
// needed (the embedded one has every row). Not in production builds.
#pragma once

#include "platform/linux/seccomp.h"
#include "platform/mutation.h"

namespace stockade::platform {

// The layer a row belongs to; a row of no layer stops the process naming it
// (seccomp_filter_gen runs the table at build time, so the build fails).
mutation::Layer seccompLayerOf(const SeccompRule& rule) noexcept;

// The filter without the disabled layer's rows; nullptr when no seccomp
// layer is disabled. Compiled once per options; thread-safe.
const SeccompProgram* mutatedSeccompProgram(const SeccompOptions& options);

}  // namespace stockade::platform
