#!/usr/bin/env bash
# The torch-free layers (core, telemetry, report, data) and their tests built with AddressSanitizer and
# UndefinedBehaviorSanitizer, then a short libFuzzer run of each fuzz target (fuzz/): the scenario loader on YAML and
# JSON, record reading, Chrome-trace reading (`gpubench trace`), JPEG decoding (the input pipeline), the results store
# (records into `db add`, history filters) and the printers (record text into every format). Seeds come from configs/,
# tests/data/, tests/fixtures/ and small inputs written here. Part of scripts/test.sh.
# Needs clang with its runtime (Debian: clang, libclang-rt-14-dev), installed here when missing and apt-get can; where
# no such compiler can be had the script says so and skips (exit 0): gcc's sanitizers lack libFuzzer.
# Knobs: GPUBENCH_FUZZ_SECONDS (per target, default 25), GPUBENCH_SANITIZE_BUILD_DIR (default build-sanitize/),
# GPUBENCH_NO_APT=1 (never call apt-get). The fuzzers start from seed 1, so a CI run is reproducible.
# Findings: libFuzzer's crash-*/timeout-* inputs under <build>/fuzz-findings/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GPUBENCH_SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"
SECONDS_EACH="${GPUBENCH_FUZZ_SECONDS:-25}"
log() { echo "[sanitize] $*" >&2; }

have_fuzzing_clang() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local t
  t="$(mktemp -d)"
  printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' > "$t/f.cpp"
  clang++ -fsanitize=fuzzer,address,undefined "$t/f.cpp" -o "$t/f" >/dev/null 2>&1
  local rc=$?
  rm -rf "$t"
  return $rc
}

if ! have_fuzzing_clang; then
  if [ "${GPUBENCH_NO_APT:-0}" != 1 ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    log "installing clang and its sanitizer/libFuzzer runtime (Debian: clang, libclang-rt-14-dev)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev >&2 || \
      { DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 && \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev >&2; } || true
  fi
fi
if ! have_fuzzing_clang; then
  log "SKIPPED: no clang with ASan/UBSan/libFuzzer here (install clang and libclang-rt-dev); the sanitizer and fuzz runs did not happen"
  exit 0
fi

generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  log "configuring $BUILD (clang, address+undefined, torch-free layers, fuzz targets)"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DGPUBENCH_TORCH_FREE=ON -DGPUBENCH_SANITIZE=address,undefined -DGPUBENCH_FUZZ=ON -DGPUBENCH_BUILD_TESTS=ON >&2
fi
log "building"
cmake --build "$BUILD" -j "$(nproc)" >&2

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
log "torch-free tests under ASan+UBSan"
(cd "$BUILD" && ctest --output-on-failure -j "$(nproc)")

# Seed corpora in the build tree (libFuzzer adds what it finds to the first corpus folder; the repository stays clean).
corpus="$BUILD/fuzz-corpus"
findings="$BUILD/fuzz-findings"
rm -rf "$corpus"
mkdir -p "$corpus/scenario" "$corpus/record" "$corpus/trace" "$corpus/jpeg" "$corpus/store" "$corpus/printer" \
         "$corpus/store_url" "$findings"
# Store URLs: passwords with a space, a stray '%', an '@', '/', '?', '#', quotes; a capitalised scheme; whole names.
printf '\000pa ss' > "$corpus/store_url/space"
printf '\000p%%zz\000me' > "$corpus/store_url/percent"
printf '\001s3cr%%2Ft' > "$corpus/store_url/query"
printf '\002p@ss/w?rd#1' > "$corpus/store_url/reserved"
printf '\003postgresql://a:b@[::1]:5432,h2:6/d?x=1&password=zz' > "$corpus/store_url/whole"
printf "\\003x.db?mode=memory#frag" > "$corpus/store_url/file"
# A user name with ':' (the fuzzer once took its tail for the password: the harness now knows it cannot tell).
printf '\000port=@\000us:er=p-port=' > "$corpus/store_url/colon_user"
# JPEG: a seed in each mode (the odd mode encodes an image from the input, so it needs no files).
printf '\001\040\030\132\000\200abcdefghijklmnopqrstuvwxyz0123456789' > "$corpus/jpeg/seed1"
printf '\000\007\377\330\377\340\000\020JFIF\000' > "$corpus/jpeg/seed2"
n=0
for f in "$ROOT"/configs/*.yaml "$ROOT"/configs/*.json "$ROOT"/configs/published/*.yaml "$ROOT"/tests/data/*.yaml; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  case "$f" in *.json) byte='\001' ;; *) byte='\000' ;; esac  # the fuzzer's first byte picks the format
  { printf "$byte"; cat "$f"; } > "$corpus/scenario/seed$n"
done
find "$ROOT/tests/fixtures" -name '*.json' -size -1024k -print0 2>/dev/null | head -z -n 200 | \
  xargs -0 -r -I{} cp {} "$corpus/record/" 2>/dev/null || true

# The store: a few real records (first byte even: `db add`) and history filters (odd: NUL-separated values).
k=0
for f in $(find "$ROOT/tests/fixtures" -name '*.json' -size -256k 2>/dev/null | head -n 20); do
  k=$((k + 1))
  { printf '\000'; cat "$f"; } > "$corpus/store/record$k"
done
printf "\001resnet50\000batch_size\000256\000precision\000fp16' OR 1=1 --\000x\000y\000z\000w\000samples_per_s\0002026-11-01" > "$corpus/store/filter1"
# The printers: record-like text with the characters each format must neutralise.
printf '=HYPERLINK("x")\000<script>\000\033[2J\000a|b\rc\000@SUM\000-1.5\000\001\000\357\277\276\000+1\000t\000cell\000x' \
  > "$corpus/printer/seed1"

# Chrome traces: a small Kineto-shaped one (kernels, a copy, CPU operators, launch calls, step markers).
cat > "$corpus/trace/seed1" <<'TRACE'
{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "gpubench::profiled_step", "ts": 100.5, "dur": 900, "tid": 1},
 {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 110, "dur": 50, "tid": 1},
 {"ph": "X", "cat": "cpu_op", "name": "aten::copy_", "ts": 120, "dur": 5, "tid": 1},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 130, "dur": 4, "tid": 1},
 {"ph": "X", "cat": "kernel", "name": "nvjet_sm90_tst_256x128", "ts": 140, "dur": 300, "tid": 7},
 {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>", "ts": 450, "dur": 40, "tid": 7},
 {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD (Device -> Device)", "ts": 500, "dur": 10, "tid": 8},
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "ts": 1100, "dur": 800, "tid": 1}
]}
TRACE

status=0
for target in scenario record trace jpeg store printer store_url; do
  log "fuzzing ${target} reading for ${SECONDS_EACH} s ($(ls "$corpus/$target" | wc -l) seeds)"
  if ! (cd "$findings" && "$BUILD/fuzz/${target}_fuzzer" -seed=1 -max_total_time="$SECONDS_EACH" -timeout=10 \
        -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 "$corpus/$target" 2> "$BUILD/fuzz-${target}.log"); then
    status=1
    log "FINDING in ${target} reading: see $BUILD/fuzz-${target}.log and $findings"
    tail -40 "$BUILD/fuzz-${target}.log" >&2
  fi
  grep -E "^stat::number_of_executed_units|^Done [0-9]+ runs" "$BUILD/fuzz-${target}.log" | tail -2 >&2 || true
done
[ $status -eq 0 ] && log "sanitizers and fuzzers: clean"
exit $status
