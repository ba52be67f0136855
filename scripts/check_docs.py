#!/usr/bin/env python3
"""Every repository path the user-facing docs name exists: README.md, docs/*.md and results/README.md.

A path is a word that starts with one of the repository's top-level folders (src/, tests/, docs/, results/, ...),
written plainly or as a Markdown link target (relative links are resolved from the file that holds them). A path
written as `COMMIT:path` (git's own notation, e.g. `f77cd0e:results/...`) names a file in history and is checked
with `git cat-file` when the repository's history is at hand. Globs and placeholders (`*`, `<`, `{`) are skipped.
Exits 1 listing each missing path with file:line, else prints how many it checked.

  python3 scripts/check_docs.py            # from anywhere inside the repository
"""
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# Headers of other projects a doc may name by file name.
EXTERNAL = {"rocm_smi.h", "nvml.h", "nccl.h", "cublasLt.h", "nvjpeg.h", "jpeglib.h", "cudnn_frontend.h"}
TOP = ("src", "include", "tests", "docs", "scripts", "configs", "results", "cmake", "fuzz", "bench", "schemas", ".ci")
PLAIN = re.compile(r"(?<![\w./:-])((?:[0-9a-f]{7,40}:)?(?:%s)/[\w./@+*-]*)" % "|".join(re.escape(t) for t in TOP))
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A source file named by itself or by a partial path (`metrics.cpp`, `fused/decode_ops.cpp`): some tracked file ends so.
SOURCE = re.compile(r"(?<![\w./:*-])([\w/*-]*\.(?:cpp|hpp|h|cu|cuh|py|sh|cmake|in))(?!\.?\w)")


def docs():
    yield os.path.join(ROOT, "README.md")
    for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
        if name.endswith(".md"):
            yield os.path.join(ROOT, "docs", name)
    if os.path.exists(os.path.join(ROOT, "results", "README.md")):
        yield os.path.join(ROOT, "results", "README.md")


def in_history(commit, path):
    r = subprocess.run(["git", "-C", ROOT, "cat-file", "-e", "%s:%s" % (commit, path.rstrip("/"))],
                       capture_output=True)
    if r.returncode == 0:
        return True
    # Without that commit (a shallow clone) history cannot be checked: not counted as missing.
    return subprocess.run(["git", "-C", ROOT, "cat-file", "-e", commit + "^{commit}"], capture_output=True).returncode != 0


def tracked():
    out = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True, text=True).stdout.split("\n")
    return {"/" + f for f in out if f}


TRACKED = tracked()


def check(path):
    missing, checked = [], 0
    here = os.path.dirname(path)
    for lineno, line in enumerate(open(path, encoding="utf-8"), 1):
        found = set()
        for m in LINK.finditer(line):
            target = m.group(1)
            if "://" in target or target.startswith("mailto:"):
                continue
            full = os.path.normpath(os.path.join(here, target))
            if full.startswith(ROOT):
                found.add(os.path.relpath(full, ROOT))
        for m in PLAIN.finditer(line):
            found.add(m.group(1).rstrip(".,;:)"))
        for m in SOURCE.finditer(line):
            name = m.group(1)
            if (name.split("/")[0] in TOP or name.startswith(("/", "torch/", ".")) or "*" in name or
                    name in EXTERNAL):
                continue  # a full path (checked above), an absolute or a LibTorch header
            checked += 1
            if not any(f.endswith("/" + name) for f in TRACKED):
                missing.append("%s:%d: %s (no tracked file ends so)" % (os.path.relpath(path, ROOT), lineno, name))
        for p in found:
            if any(c in p for c in "*<{"):
                continue
            checked += 1
            if ":" in p.split("/")[0]:
                commit, rel = p.split(":", 1)
                ok = in_history(commit, rel)
            else:
                ok = os.path.exists(os.path.join(ROOT, p))
            if not ok:
                missing.append("%s:%d: %s" % (os.path.relpath(path, ROOT), lineno, p))
    return missing, checked


def main():
    missing, checked = [], 0
    for d in docs():
        m, c = check(d)
        missing += m
        checked += c
    for m in missing:
        print("missing: " + m)
    if missing:
        print("%d of %d paths named in the docs do not exist" % (len(missing), checked))
        return 1
    print("%d paths named in the docs: ok" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
