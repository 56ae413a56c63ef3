#!/bin/sh
# tests/tools/docs_paths.sh ROOT FILE... — every file of the tree the docs name still exists.
# The docs point a reader at ~1,000 source files (`runtime/cpu/sdpa.cpp`, "read
# autograd/ops/gelu.cpp next"); a file renamed or split in code and not in prose sends a
# student to nothing.
#
# How: a path is a word that starts with one of the tree's top folders and ends in a source or
# doc extension (.cpp .h .cu .cuh .md .sh .py .toml .json .txt) or in "/" (a folder); words
# with a pattern or placeholder in them (* { < …, "foo", a word in capitals such as FILE) are
# examples, and IMDb's own folders (train/pos/, train/unsup/: the archive's) are not ours.
# "dir/{a,b}.h" and "dir/a.h, b.h" are prose for several files: only the first is checked.
# Each MASE_* environment variable the docs name must also be read somewhere in the sources.
# Prints "FILE:LINE: PATH does not exist" for each miss and a count; exit 1 on any miss.
root=$1
shift
tops='autograd|bench|cuda|data|docs|fuzz|graph|models|quant|runtime|scripts|search|tests|tools|train'
awk -v tops="$tops" '
  {
    line = $0
    re = "(^|[^A-Za-z0-9_./-])(" tops ")/[A-Za-z0-9_./{}*<>-]*"
    while (match(line, re)) {
      p = substr(line, RSTART, RLENGTH)
      line = substr(line, RSTART + RLENGTH)
      sub(/^[^A-Za-z]/, "", p)           # the character before the path
      sub(/[.]+$/, "", p)                 # a full stop after it
      if (p ~ /[{}*<>]|foo|\.\.\.|(^|\/)[A-Z][A-Z]+([.\/]|$)|^(train|test)\/(pos|neg|unsup)\//) continue
      if (p !~ /\/$/ && p !~ /\.(cpp|h|cu|cuh|md|sh|py|toml|json|txt)$/) continue
      print p, FILENAME ":" FNR
    }
  }' "$@" | sort -u > "${TMPDIR:-/tmp}/docs_paths.$$" || exit 1
bad=0
n=0
while read -r path where; do
  n=$((n + 1))
  if [ ! -e "$root/$path" ]; then
    echo "docs_paths: $where: $path does not exist"
    bad=$((bad + 1))
  fi
done < "${TMPDIR:-/tmp}/docs_paths.$$"
rm -f "${TMPDIR:-/tmp}/docs_paths.$$"
for v in $(grep -o -h -E 'MASE_[A-Z0-9_]+' "$@" | sort -u); do
  n=$((n + 1))
  if ! grep -r -q -w --include='*.cpp' --include='*.h' --include='*.cu' --include='*.cuh' \
       --include='*.sh' --include='CMakeLists.txt' --include='*.py' "$v" \
       "$root/autograd" "$root/bench" "$root/cuda" "$root/data" "$root/graph" "$root/models" \
       "$root/quant" "$root/runtime" "$root/scripts" "$root/search" "$root/tools" "$root/train" \
       "$root/CMakeLists.txt"; then
    echo "docs_paths: $(grep -n -w -H "$v" "$@" | head -1 | cut -d: -f1-2): $v is read by no source"
    bad=$((bad + 1))
  fi
done
echo "docs_paths: $n paths and variables checked in $# files, $bad missing"
[ "$bad" -eq 0 ]
