#!/usr/bin/env bash
# Measures the idle RSS of `serve` on embedded SQLite: WAIT seconds (10)
# after /readyz answers, VmRSS and its two parts from /proc/PID/smaps: the
# binary's file-backed pages (its text, rodata and pclntab mapped since
# start) and anonymous memory (Go heap, stacks, SQLite's and QuickJS's
# allocations). Each run starts cold: the binary's pages are dropped from
# the page cache first (fadvise DONTNEED on that file only). A warm binary
# (just linked) maps more for the same code, as much as 39 vs 64 MB: the
# kernel maps whole large folios of the page cache, and their sizes depend
# on how the file was written, not on the program.
#
#   scripts/idlerss.sh [-r RUNS] [-b BINARY] [-d DATADIR]
#
# -d reuses a data directory (a restart: no migrations to apply); without
# it every run starts on a fresh one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=3 BIN= DATA= PORT=${PORT:-18555} WAIT=${WAIT:-10}
while [ $# -gt 0 ]; do
  case $1 in
    -r) RUNS=$2; shift 2 ;;
    -b) BIN=$2; shift 2 ;;
    -d) DATA=$2; shift 2 ;;
    *) echo "usage: $0 [-r RUNS] [-b BINARY] [-d DATADIR]" >&2; exit 2 ;;
  esac
done
OUT=$(mktemp -d /tmp/idlerss.XXXXXX)
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT
if [ -z "$BIN" ]; then
  go build -o "$OUT/agentplatform" ./cmd/agentplatform
  BIN=$OUT/agentplatform
fi
BIN=$(realpath "$BIN")
echo "binary: $BIN, $(($(stat -c %s "$BIN") / 1000000)) MB"
for i in $(seq 1 "$RUNS"); do
  dir=${DATA:-$(mktemp -d "$OUT/data.XXXX")}
  dd if="$BIN" iflag=nocache count=0 status=none
  AP_DATA_DIR=$dir AP_ADDR=127.0.0.1:$PORT "$BIN" serve >"$OUT/serve.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  sleep "$WAIT"
  # Rss minus Anonymous of the binary's mappings is its file-backed part.
  awk -v bin="$BIN" '
    /^[0-9a-f]+-[0-9a-f]+ / { mine = ($6 == bin) }
    /^Rss:/ { if (mine) file += $2 }
    /^Anonymous:/ { anon += $2; if (mine) file -= $2 }
    END { printf "file-backed (binary) %.1f MB, anonymous %.1f MB, ", file/1024, anon/1024 }' "/proc/$SERVER/smaps"
  awk '/^VmRSS:/ { printf "VmRSS %.1f MB\n", $2/1024 }' "/proc/$SERVER/status"
  kill "$SERVER"
  wait "$SERVER" 2>/dev/null || true
  SERVER=
done
