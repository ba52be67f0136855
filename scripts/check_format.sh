#!/usr/bin/env bash
# The format check: every C++/CUDA line added or changed since the format base must be as clang-format writes it
# (.clang-format: Google's style at 120 columns, what the code is written to). Lines older than the base are left as
# they are, so the tree converges file by file as changes touch it, with no commit that reformats everything.
#   scripts/check_format.sh [BASE]   BASE: a commit (default: .ci/format-base, the commit that introduced the check)
# GPUBENCH_FORMAT_REPO=DIR checks the repository in DIR instead of this one (the check's own test does).
# Exit 0: formatted; 1: the diff clang-format wants is printed (fix with `git clang-format BASE`); 2: no tool.
set -euo pipefail
cd "${GPUBENCH_FORMAT_REPO:-$(dirname "$0")/..}"
base="${1:-$(tr -d '[:space:]' < .ci/format-base)}"
if ! command -v git-clang-format > /dev/null || ! command -v clang-format > /dev/null; then
  echo "[format] git-clang-format and clang-format are needed (Debian: apt install clang-format)" >&2
  exit 2
fi
if ! git cat-file -e "${base}^{commit}" 2> /dev/null; then
  # A shallow clone may not hold the base: then the last commit's lines are what can be checked.
  echo "[format] $base is not in this clone: checking the lines of the last commit only" >&2
  base="HEAD~1"
  git cat-file -e "${base}^{commit}" 2> /dev/null || { echo "[format] no earlier commit here: nothing to check" >&2; exit 0; }
fi
out=$(git clang-format --diff --extensions c,cc,cpp,cxx,h,hpp,cu,cuh "$base" -- src include tests fuzz 2>&1) || {
  echo "$out" >&2
  exit 2
}
if [[ "$out" == diff* ]]; then
  echo "$out"
  echo "[format] lines changed since $base are not as .clang-format writes them: run  git clang-format $base" >&2
  exit 1
fi
echo "[format] the lines changed since $base follow .clang-format"
