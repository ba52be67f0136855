#!/usr/bin/env bash
# Sets up and builds gpubench if needed, then runs the whole test suite (GoogleTest through ctest).
# Tests named *_CUDA skip themselves where no GPU is visible. Extra arguments go to ctest (e.g. -R Scenario).
set -euo pipefail
# shellcheck source=bootstrap.sh
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
GPUBENCH_WITH_TESTS=ON gpubench_bootstrap
cd "$GPUBENCH_BUILD_DIR"
exec ctest --output-on-failure -j "$(nproc)" "$@"
