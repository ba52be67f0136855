#!/usr/bin/env bash
# Sets up and builds gpubench if needed, then runs the whole test suite (GoogleTest through ctest), then the
# ASan+UBSan build of the torch-free layers with a short fuzz run of each reader (scripts/sanitize.sh).
# Tests named *_CUDA skip themselves where no GPU is visible. Extra arguments go to ctest (e.g. -R Scenario) and then
# only ctest runs. GPUBENCH_SKIP_SANITIZE=1 skips the sanitizer/fuzz stage.
set -euo pipefail
# shellcheck source=bootstrap.sh
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
GPUBENCH_WITH_TESTS=ON gpubench_bootstrap
(cd "$GPUBENCH_BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" "$@")
if [ $# -eq 0 ] && [ "${GPUBENCH_SKIP_SANITIZE:-0}" != 1 ]; then
  "$GPUBENCH_ROOT/scripts/sanitize.sh"
fi
