#!/usr/bin/env bash
# Sets up and builds gpubench if needed, then runs the whole test suite (GoogleTest through ctest); then the portable
# build (the newest LibTorch on PyPI, no CUDA module, no nvcc on PATH) with its suite (scripts/test_portable.sh);
# then the ASan+UBSan build of the torch-free layers with a short fuzz run of each reader (scripts/sanitize.sh).
# Tests named *_CUDA skip themselves where no GPU is visible. Extra arguments go to ctest (e.g. -R Scenario) and then
# only the first build's ctest runs. GPUBENCH_SKIP_PORTABLE=1 skips the portable build, GPUBENCH_SKIP_SANITIZE=1 the
# sanitizer/fuzz stage. A whole run first checks that the C++ lines changed since .ci/format-base follow .clang-format
# (scripts/check_format.sh; GPUBENCH_SKIP_FORMAT=1 skips it).
set -euo pipefail
# shellcheck source=bootstrap.sh
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
GPUBENCH_WITH_TESTS=ON gpubench_bootstrap
if [ $# -eq 0 ] && [ "${GPUBENCH_SKIP_FORMAT:-0}" != 1 ]; then
  "$GPUBENCH_ROOT/scripts/check_format.sh"
fi
(cd "$GPUBENCH_BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" "$@")
[ $# -eq 0 ] || exit 0
if [ "${GPUBENCH_SKIP_PORTABLE:-0}" != 1 ]; then
  (unset GPUBENCH_BUILD_DIR GPUBENCH_TORCH_VERSION; "$GPUBENCH_ROOT/scripts/test_portable.sh")
fi
if [ "${GPUBENCH_SKIP_SANITIZE:-0}" != 1 ]; then
  "$GPUBENCH_ROOT/scripts/sanitize.sh"
fi
