#!/bin/sh
# tests/tools/cli_check.sh CODE COMMAND [ARGS...] — runs COMMAND, prints what it printed, and
# prints "cli_check: ok" only if it exited with CODE and, when CODE is not 0, printed exactly
# one line (the house rule for errors). ctest matches the message and "cli_check: ok".
want=$1
shift
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
lines=$(printf '%s\n' "$out" | wc -l)
if [ "$code" -ne "$want" ]; then echo "cli_check: exit status $code, expected $want"; exit 1; fi
if [ "$want" -ne 0 ] && [ "$lines" -ne 1 ]; then echo "cli_check: $lines lines, expected 1"; exit 1; fi
echo "cli_check: ok"
