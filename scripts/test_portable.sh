#!/usr/bin/env bash
# The portable build, as a machine without the CUDA toolkit makes it: the newest LibTorch on PyPI (GPUBENCH_TORCH_VERSION,
# default below), GPUBENCH_CUDA=OFF, no nvcc on PATH and no CUDACXX. Checks that no .cu file was compiled and that no
# translation unit included a CUDA header (ninja's dependency log), then runs the whole suite on the CPU (tests of
# the CUDA module skip themselves or check its refusals) - the suites that see LibTorch or run the binary; the
# torch-free suites ran in the main build. Called by scripts/test.sh; runs on its own too.
# Knobs: GPUBENCH_TORCH_VERSION (default 2.15.0, PyPI's newest release on 2026-12-04), GPUBENCH_BUILD_DIR
# (default build-torch<version>). Extra arguments go to ctest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GPUBENCH_TORCH_VERSION="${GPUBENCH_TORCH_VERSION:-2.15.0}"
export GPUBENCH_CUDA=OFF
export GPUBENCH_BUILD_DIR="${GPUBENCH_BUILD_DIR:-$ROOT/build-torch$GPUBENCH_TORCH_VERSION}"
log() { echo "[portable] $*" >&2; }

# No CUDA toolkit in sight: CUDACXX unset, and nvcc off PATH. A folder on PATH that holds nvcc (the toolkit's bin/, or
# /usr/local/bin with wrappers) is replaced by one of links to everything else in it.
unset CUDACXX CUDA_HOME CUDA_PATH
shadow="$GPUBENCH_BUILD_DIR/path-without-cuda"
rm -rf "$shadow"
newpath="" i=0
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  if [ -e "$d/nvcc" ]; then
    i=$((i + 1))
    mkdir -p "$shadow/$i"
    for f in "$d"/*; do
      case "$(basename "$f")" in
        nvcc|nvcc.profile|nvlink|ptxas|fatbinary|cudafe++|bin2c|cuobjdump|nvdisasm|__nvcc_device_query) continue ;;
      esac
      ln -s "$f" "$shadow/$i/$(basename "$f")"
    done
    d="$shadow/$i"
  fi
  newpath="${newpath:+$newpath:}$d"
done
export PATH="$newpath"
if command -v nvcc >/dev/null 2>&1; then
  log "error: nvcc is still on PATH ($(command -v nvcc))"
  exit 1
fi
log "LibTorch ${GPUBENCH_TORCH_VERSION}, GPUBENCH_CUDA=OFF, no nvcc on PATH, in $GPUBENCH_BUILD_DIR"
# Only the suites that see LibTorch or run the binary (tests/CMakeLists.txt, GPUBENCH_TEST_SUITES): the torch-free ones
# ran in the main build already and are the same code here. GPUBENCH_PORTABLE_SUITES=all builds and runs them too.
suites="${GPUBENCH_PORTABLE_SUITES:-torch}"
export GPUBENCH_CMAKE_ARGS="${GPUBENCH_CMAKE_ARGS:-} -DGPUBENCH_TEST_SUITES=$suites"
if [ -f "$GPUBENCH_BUILD_DIR/CMakeCache.txt" ] && ! grep -q "^GPUBENCH_TEST_SUITES:STRING=$suites\$" "$GPUBENCH_BUILD_DIR/CMakeCache.txt"; then
  cmake -S "$ROOT" -B "$GPUBENCH_BUILD_DIR" -DGPUBENCH_TEST_SUITES="$suites" >&2
fi
# shellcheck source=bootstrap.sh
source "$ROOT/scripts/bootstrap.sh"
GPUBENCH_WITH_TESTS=ON gpubench_bootstrap

# What the build compiled: no CUDA source, no CUDA header (the toolkit's, or LibTorch's ATen/cuda and c10/cuda).
# torch/cuda.h is not one: LibTorch's C++ API asks its CPU library whether CUDA is there (torch::cuda::is_available).
if grep -q "GPUBENCH_WITH_CUDA" "$GPUBENCH_BUILD_DIR/compile_commands.json"; then
  log "error: a unit was compiled with GPUBENCH_WITH_CUDA"
  exit 1
fi
if grep -q '\.cu"' "$GPUBENCH_BUILD_DIR/compile_commands.json"; then
  log "error: a .cu file was compiled"
  exit 1
fi
if command -v ninja >/dev/null 2>&1 && [ -f "$GPUBENCH_BUILD_DIR/build.ninja" ]; then
  cuda_headers=$(cd "$GPUBENCH_BUILD_DIR" && ninja -t deps | grep -E '(^|/)(cuda_runtime[a-z_]*\.h|cuda\.h|cublas[A-Za-z_]*\.h|nvjpeg\.h|nccl\.h)$|/(ATen|c10)/cuda/' | \
                 grep -v '/torch/csrc/api/include/torch/cuda\.h$' | sort -u || true)
  if [ -n "$cuda_headers" ]; then
    log "error: CUDA headers were included:"
    echo "$cuda_headers" | head -20 >&2
    exit 1
  fi
  log "no .cu file, no CUDA header ($(cd "$GPUBENCH_BUILD_DIR" && ninja -t deps | grep -c '^[^ ]') units checked)"
fi
"$GPUBENCH_BUILD_DIR/gpubench" info --device cpu >&2
(cd "$GPUBENCH_BUILD_DIR" && ctest --output-on-failure -j "$(nproc)" "$@")
