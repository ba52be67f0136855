#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian 12 machine (and the GPU machine, where everything is preinstalled):
#   1. Debian packages (compiler, CMake, CLI11, fmt, spdlog, nlohmann-json, yaml-cpp, GoogleTest), only if missing;
#   2. LibTorch = the C++ side of pip torch 2.11.0: a python3 that already has it, or a project venv (.venv);
#      GPUBENCH_TORCH_VERSION=X.Y.Z (any PyPI release from 2.11.0 on) uses torch X.Y.Z instead, installed into a venv
#      of its own (.venv-torchX.Y.Z) and built in a folder of its own (build-torchX.Y.Z), so versions sit side by side;
#   3. CMake configure (once) and an incremental build.
# Source it (it sets GPUBENCH_BUILD_DIR and GPUBENCH_PYTHON) or run it. Output goes to stderr.
# Knobs: GPUBENCH_BUILD_DIR (default build/), GPUBENCH_CMAKE_ARGS (extra configure arguments), GPUBENCH_NO_APT=1 (never call apt-get), GPUBENCH_PYTHON (a python3
# with torch 2.11), GPUBENCH_WITH_TESTS=ON|OFF|keep (default ON; keep: what the build folder has, OFF in a new one),
# GPUBENCH_CUDA=AUTO|ON|OFF (the CUDA module; OFF: no nvcc needed, trains on the CPU, see README),
# GPUBENCH_PACKAGES=run|test (default test: the Debian packages the tests need too), CMAKE_BUILD_TYPE (default Release),
# GPUBENCH_BUILD_TARGETS (what to build, default everything; scripts/gpubench builds only the binary),
# GPUBENCH_NEED_REFERENCE=0|1 (default 1: the python also needs torchvision and transformers, for the parity tests'
# reference exports; scripts/gpubench, which runs no test, asks only for torch).
set -euo pipefail

GPUBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TORCH_DEFAULT="2.11.0"  # the GPU machine's, and the README commands'
TORCH_PIN="${GPUBENCH_TORCH_VERSION:-$TORCH_DEFAULT}"
case "$TORCH_PIN" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "[bootstrap] error: GPUBENCH_TORCH_VERSION='$TORCH_PIN' is not a release number like 2.15.0" >&2; exit 2 ;;
esac
if [ "$TORCH_PIN" = "$TORCH_DEFAULT" ]; then
  GPUBENCH_BUILD_DIR="${GPUBENCH_BUILD_DIR:-$GPUBENCH_ROOT/build}"
else
  GPUBENCH_BUILD_DIR="${GPUBENCH_BUILD_DIR:-$GPUBENCH_ROOT/build-torch$TORCH_PIN}"
fi
TORCHVISION_PIN="0.26.0"
TRANSFORMERS_PIN="5.17.0"  # the GPU machine's version; used only by the tests' reference export

_log() { echo "[bootstrap] $*" >&2; }
# Free space (GB) in the folder $1, and a warning line where a step that needs $2 GB will not fit.
_check_space() {
  local free
  free=$(df -Pk "$1" 2>/dev/null | awk 'NR == 2 { print int($4 / 1048576) }')
  [ -z "$free" ] || [ "$free" -ge "$2" ] || \
    _log "warning: $1 has ${free} GB free and this step needs about $2 GB (pip says 'No space left on device' if not)"
}
_die() { echo "[bootstrap] error: $*" >&2; exit 1; }

# What building and running gpubench needs (scripts/gpubench installs only these), then what the tests add (the
# GoogleTest headers, the Python of the schema and export tests, the report's charts and browser, the launchers, and
# the PostgreSQL server the store's tests start on a local socket and stop, and clang-format for the format check).
_apt_run=(g++ cmake ninja-build git python3 python3-venv python3-pip ccache
          libcli11-dev libfmt-dev libspdlog-dev nlohmann-json3-dev libyaml-cpp-dev
          librocm-smi-dev libgloo-dev libsqlite3-dev libpq-dev libjpeg62-turbo-dev zlib1g-dev)
_apt_test=(libgtest-dev python3-matplotlib python3-pandas python3-jsonschema python3-yaml python3-prometheus-client
           openmpi-bin slurm-wlm chromium fonts-dejavu-core postgresql clang-format)

_install_debian_packages() {
  command -v dpkg-query >/dev/null 2>&1 || { _log "not a Debian system: skipping package checks"; return 0; }
  local missing=() wanted=("${_apt_run[@]}")
  [ "${GPUBENCH_PACKAGES:-test}" = run ] || wanted+=("${_apt_test[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "${GPUBENCH_NO_APT:-0}" = 1 ] || ! command -v apt-get >/dev/null 2>&1; then
    _log "not installing ${missing[*]} (GPUBENCH_NO_APT=1 or no apt-get); CMake will say if anything is really missing"
    return 0
  fi
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  _log "installing Debian packages: ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
}

# A python3 whose torch is the pinned release ($2, default TORCH_PIN), and (GPUBENCH_NEED_REFERENCE=1) torchvision
# and transformers, which the tests' reference exports need.
_has_torch() {
  "$1" - "${2:-$TORCH_PIN}" <<'PY' >/dev/null 2>&1
import sys, torch
assert torch.__version__.split("+")[0] == sys.argv[1]
PY
}
_has_references() {
  "$1" -c 'import torchvision, transformers' >/dev/null 2>&1
}

# The python of the default torch (2.11.0), with the references when asked for: the tests' reference exports use it
# whichever LibTorch the C++ side is built against.
_pick_python() {
  local TORCH_PIN="$TORCH_DEFAULT"
  local cand need="${GPUBENCH_NEED_REFERENCE:-1}" venv="$GPUBENCH_ROOT/.venv/bin/python"
  for cand in "${GPUBENCH_PYTHON:-}" python3 "$venv"; do
    [ -n "$cand" ] && command -v "$cand" >/dev/null 2>&1 && _has_torch "$cand" || continue
    if [ "$need" = 1 ] && ! _has_references "$cand"; then
      [ "$(command -v "$cand")" = "$venv" ] || continue  # only the project's own venv gets packages added
      _log "adding torchvision ${TORCHVISION_PIN} and transformers ${TRANSFORMERS_PIN} to .venv (the tests' references)"
      "$venv" -m pip install -q --no-cache-dir --progress-bar off "torchvision==${TORCHVISION_PIN}" "transformers==${TRANSFORMERS_PIN}" >&2
      _has_references "$venv" || _die "torchvision/transformers did not install into .venv"
    fi
    command -v "$cand"
    return 0
  done
  local what="torch ${TORCH_PIN}"
  [ "$need" = 1 ] && what="$what, torchvision and transformers"
  _log "no python3 with $what found: installing into $GPUBENCH_ROOT/.venv (about 5 GB, once)"
  _check_space "$GPUBENCH_ROOT" 6
  [ -x "$venv" ] || python3 -m venv "$GPUBENCH_ROOT/.venv" >&2 || _die "python3 -m venv failed (install python3-venv)"
  "$venv" -m pip install -q --upgrade pip >&2
  local pkgs=("torch==${TORCH_PIN}")
  [ "$need" = 1 ] && pkgs+=("torchvision==${TORCHVISION_PIN}" "transformers==${TRANSFORMERS_PIN}")
  "$venv" -m pip install -q --no-cache-dir --progress-bar off "${pkgs[@]}" >&2
  _has_torch "$venv" || _die "torch ${TORCH_PIN} did not install into .venv"
  echo "$venv"
}

# GPUBENCH_TORCH_VERSION's torch, in a venv of its own (the whole wheel with its nvidia-* libraries: the CUDA module
# links them, and the wheel's libtorch_cpu loads the CUDA runtime even in a build without the module).
_pick_torch_python() {
  local venv="$GPUBENCH_ROOT/.venv-torch$TORCH_PIN"
  if ! _has_torch "$venv/bin/python"; then
    _log "installing torch ${TORCH_PIN} into $venv (about 5 GB, once)"
    _check_space "$GPUBENCH_ROOT" 6
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2 || _die "python3 -m venv failed (install python3-venv)"
    "$venv/bin/python" -m pip install -q --no-cache-dir --progress-bar off "torch==${TORCH_PIN}" >&2 || \
      _die "pip could not install torch==${TORCH_PIN} (is it a release on PyPI for this python?)"
    _has_torch "$venv/bin/python" || _die "torch ${TORCH_PIN} did not install into $venv"
  fi
  echo "$venv/bin/python"
}

_configure_and_build() {
  local py="$1" torch_py="$2" prefix generator=()
  prefix="$("$torch_py" -c 'import torch; print(torch.utils.cmake_prefix_path)')"
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  local tests="${GPUBENCH_WITH_TESTS:-ON}"
  if [ "$tests" = keep ]; then
    tests=$(sed -n 's/^GPUBENCH_BUILD_TESTS:BOOL=//p' "$GPUBENCH_BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
    [ -n "$tests" ] || tests=OFF
  fi
  local cache="$GPUBENCH_BUILD_DIR/CMakeCache.txt" cuda="${GPUBENCH_CUDA:-}"
  [ -n "$cuda" ] || cuda=$(sed -n 's/^GPUBENCH_CUDA:STRING=//p' "$cache" 2>/dev/null || true)
  [ -n "$cuda" ] || cuda=AUTO
  if [ ! -f "$cache" ] || ! grep -q "GPUBENCH_PYTHON:FILEPATH=$py\$" "$cache" \
     || ! grep -qi "GPUBENCH_BUILD_TESTS:BOOL=$tests\$" "$cache" || ! grep -q "CMAKE_PREFIX_PATH:.*=$prefix\$" "$cache" \
     || ! grep -q "GPUBENCH_CUDA:STRING=$cuda\$" "$cache"; then
    _log "configuring $GPUBENCH_BUILD_DIR (LibTorch from $prefix, GPUBENCH_CUDA=$cuda)"
    cmake -S "$GPUBENCH_ROOT" -B "$GPUBENCH_BUILD_DIR" "${generator[@]}" \
        -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" -DCMAKE_PREFIX_PATH="$prefix" -DGPUBENCH_CUDA="$cuda" \
        -DGPUBENCH_PYTHON="$py" -DGPUBENCH_BUILD_TESTS="$tests" ${GPUBENCH_CMAKE_ARGS:-} >&2
  fi
  local targets=()
  for t in ${GPUBENCH_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  _log "building ${GPUBENCH_BUILD_TARGETS:-everything} (incremental)"
  cmake --build "$GPUBENCH_BUILD_DIR" -j "$(nproc)" "${targets[@]}" >&2
}

gpubench_bootstrap() {
  _install_debian_packages
  if [ "${GPUBENCH_CUDA:-AUTO}" != OFF ]; then
    command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ] || \
      _log "no CUDA toolkit (nvcc) found: building without the CUDA module (trains on the CPU; GPUBENCH_CUDA=OFF says so)"
    [ -x /usr/local/cuda/bin/nvcc ] && export PATH="$PATH:/usr/local/cuda/bin"
  fi
  if [ "$TORCH_PIN" = "$TORCH_DEFAULT" ]; then
    GPUBENCH_PYTHON="$(_pick_python)"
    GPUBENCH_TORCH_PYTHON="$GPUBENCH_PYTHON"
  else
    GPUBENCH_TORCH_PYTHON="$(_pick_torch_python)"
    if [ "${GPUBENCH_NEED_REFERENCE:-1}" = 1 ]; then GPUBENCH_PYTHON="$(_pick_python)"; else GPUBENCH_PYTHON="$GPUBENCH_TORCH_PYTHON"; fi
  fi
  export GPUBENCH_PYTHON GPUBENCH_TORCH_PYTHON GPUBENCH_BUILD_DIR
  _configure_and_build "$GPUBENCH_PYTHON" "$GPUBENCH_TORCH_PYTHON"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  gpubench_bootstrap
fi
