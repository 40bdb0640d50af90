#!/usr/bin/env bash
# Mutation checks of the enforcement layers (scripts/mutate): one build with
# the switch, then per layer the tests that caught it, as root and as the
# unprivileged user; a layer no test notices fails the stage.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec scripts/mutate
