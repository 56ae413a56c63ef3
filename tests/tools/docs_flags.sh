#!/bin/sh
# tests/tools/docs_flags.sh BINDIR FILE... — every flag a doc passes to one of our tools is one
# the tool still accepts. Docs quote hundreds of commands (docs/lab*.md, README.md); a flag
# renamed in code and not in prose leaves a student with "not expected" at the first command.
#
# How: awk joins lines continued with '\', finds each `mase-<tool> [sub] --flag ...` (a code
# block line or `inline code`, build/bin/ prefixes too), and prints "tool sub flag where"; the
# tool's own --help (the subcommand's, when the word after the tool is one) must name the flag.
# Flags of Google Benchmark (--benchmark_*) belong to that library, not to us.
bindir=$1
shift
tmp=${TMPDIR:-/tmp}/docs_flags.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT
awk '
  { if (cont != "") { $0 = cont " " $0; cont = "" } }
  /\\$/ { cont = substr($0, 1, length($0) - 1); next }
  {
    line = $0
    while (match(line, /mase-(train|search|bench|graph|quant|data|tpe-bench)[ \t]/)) {
      tool = substr(line, RSTART, RLENGTH - 1)
      line = substr(line, RSTART + RLENGTH)
      seg = line
      if (match(seg, /[`|;&]/)) seg = substr(seg, 1, RSTART - 1)  # the command ends there
      n = split(seg, w, /[ \t]+/)
      first = (n >= 1 && w[1] ~ /^[a-z][a-z0-9-]+$/) ? w[1] : "-"
      for (i = 1; i <= n; i++)
        for (k = split(w[i], alt, "/"); k >= 1; k--)  # --a/--b: prose for either
          if (alt[k] ~ /^--[a-zA-Z][a-zA-Z0-9-]*/ && alt[k] !~ /^--benchmark_/) {
            f = alt[k]; sub(/[=,.:)\]].*$/, "", f)
            print tool, first, f, FILENAME ":" FNR
          }
    }
  }' "$@" > "$tmp/uses" || exit 1
bad=0
uses=$(wc -l < "$tmp/uses")
# one --help per tool and per word after it; the word is a subcommand when its --help differs
# from the tool's own (CLI11 refuses an unknown word, so a non-subcommand gives no usage text)
while read -r tool first flag where; do
  key="$tool.$first"
  if [ ! -f "$tmp/$key" ]; then
    "$bindir/$tool" --help > "$tmp/$tool.-" 2>&1
    if [ "$first" != "-" ]; then
      if "$bindir/$tool" "$first" --help > "$tmp/$key.try" 2>&1 &&
         grep -q 'Usage' "$tmp/$key.try" && ! cmp -s "$tmp/$key.try" "$tmp/$tool.-"; then
        mv "$tmp/$key.try" "$tmp/$key"
      else
        cp "$tmp/$tool.-" "$tmp/$key"
      fi
    fi
  fi
  if ! grep -q -e "$flag\([^a-zA-Z0-9-]\|\$\)" "$tmp/$key"; then
    sub=""; cmp -s "$tmp/$key" "$tmp/$tool.-" || sub=" $first"
    echo "docs_flags: $where: $tool$sub has no flag $flag (see $tool$sub --help)"
    bad=$((bad + 1))
  fi
done < "$tmp/uses"
echo "docs_flags: $uses flags checked in $# files, $bad unknown"
[ "$bad" -eq 0 ]
