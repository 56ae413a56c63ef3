# scripts/gpu/env.sh — sourced by the scripts of scripts/gpu/ (not run): the environment of a
# GPU check on the device machine, from the repo root. Sets BIN, OUT, LOGS, DATA (defaults as
# scripts/gpu_pack.sh lays out .dev/), makes $OUT/summary.md with its header if missing, defines
# row "what" "result" (one markdown row), and, as scripts/gpu_run.sh does, finds the test
# fixtures by their compiled-in path (/work/main) and the libraries the pack carried.
BIN="${BIN:-.dev/bin}"
OUT="${OUT:-/tmp/mase-gpu-out}"
LOGS="${LOGS:-$OUT/logs}"
DATA="${DATA:-.dev/data}"
mkdir -p "$OUT" "$LOGS"
sum="$OUT/summary.md"
[ -f "$sum" ] || { echo "| what | result |"; echo "|---|---|"; } > "$sum"
row() { echo "| $1 | $2 |" >> "$sum"; }
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
cublas=$(ldconfig -p 2>/dev/null | awk '/libcublas\.so/ { print $NF; exit }')
export LD_LIBRARY_PATH="$PWD/.dev/lib${cublas:+:$(dirname "$cublas")}:${LD_LIBRARY_PATH:-}"
