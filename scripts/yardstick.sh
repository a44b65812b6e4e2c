#!/usr/bin/env bash
# Runs the shared yardstick (../shared/bench: fake LLM, load driver, limit
# server) against a fresh build of the platform, the way the project is
# judged: embedded SQLite (or AP_DATABASE_URL), default settings, an LLM agent
# on the `openai` system provider pointed at the fake LLM.
#
#   scripts/yardstick.sh [-n 2000] [-c 64] [--runtime llm|javascript] [--limit] [--profile SECONDS]
#   scripts/yardstick.sh --scale W [-u USERS] [-n N] [-c C]
#   scripts/yardstick.sh --inflight DELAY [-n N] [-c C]
#
# --scale runs the PostgreSQL mode (../shared/bench/scale.sh) on a fresh
# database: W=0 one `serve`, else `serve --no-worker` plus W `worker`
# processes, the runs spread over USERS users; it prints platform and
# PostgreSQL CPU per run. --inflight runs the slow-LLM mode
# (../shared/bench/inflight.sh): an LLM that answers after DELAY (e.g. 2s),
# N runs submitted C at a time to one `serve` on SQLite (defaults there:
# -n 4000 -c 2000), printing runs/s, latency and peak RSS.
#
# --runtime javascript measures a JavaScript custom agent instead (it answers
# from its input: no LLM call, so the driver's LLM requests per run read 0).
#
# --limit also measures the bare in-memory limit server in the same sitting
# and prints the score; --profile writes a CPU profile of the platform taken
# during the run to /tmp/yardstick.cpu.pprof.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-../shared/bench}
N=2000 C=64 LIMIT=0 PROFILE=0 RUNTIME=llm SCALE= USERS=1 INFLIGHT= SIZED=()
while [ $# -gt 0 ]; do
  case $1 in
    -n) N=$2; SIZED+=(-n "$2"); shift 2 ;;
    -c) C=$2; SIZED+=(-c "$2"); shift 2 ;;
    -u) USERS=$2; shift 2 ;;
    --scale) SCALE=$2; shift 2 ;;
    --inflight) INFLIGHT=$2; shift 2 ;;
    --runtime) RUNTIME=$2; shift 2 ;;
    --limit) LIMIT=1; shift ;;
    --profile) PROFILE=$2; shift 2 ;;
    *) echo "usage: $0 [-n N] [-c C] [--runtime llm|javascript] [--limit] [--profile SECONDS] | --scale W [-u U] | --inflight DELAY" >&2; exit 2 ;;
  esac
done
BENCH=$(cd "$BENCH" && pwd)
# The other two modes are the shared scripts, run from this checkout.
[ -n "$SCALE" ] && exec "$BENCH/scale.sh" -w "$SCALE" -u "$USERS" "${SIZED[@]}"
[ -n "$INFLIGHT" ] && exec "$BENCH/inflight.sh" -d "$INFLIGHT" "${SIZED[@]}"
OUT=$(mktemp -d /tmp/yardstick.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; cp "$OUT/server.log" /tmp/yardstick.server.log; rm -rf "$OUT"; }
trap cleanup EXIT

echo "building into $OUT" >&2
for t in driver fakellm limit; do (cd "$BENCH/$t" && go build -o "$OUT/$t" .); done
go build -o "$OUT/agentplatform" ./cmd/agentplatform
go build -o "$OUT/apbench" ./cmd/apbench

# wait_up waits until something answers HTTP at $1, whatever the status.
wait_up() { for _ in $(seq 100); do curl -s -o /dev/null "$1" && return 0; sleep 0.1; done; echo "not up: $1" >&2; exit 1; }

"$OUT/fakellm" -addr 127.0.0.1:18080 >"$OUT/fakellm.log" 2>&1 & pids+=($!)
AP_DATA_DIR="$OUT/data" AP_ADDR=127.0.0.1:18081 AP_OPENAI_BASE_URL=http://127.0.0.1:18080/v1 \
  AP_OPENAI_API_KEY=sk-bench AP_RATE_LIMIT=10000000 AP_DEBUG_ADDR=127.0.0.1:16060 \
  "$OUT/agentplatform" serve >"$OUT/server.log" 2>&1 & SERVER=$!; pids+=($SERVER)
wait_up http://127.0.0.1:18081/readyz
eval "$("$OUT/apbench" -base http://127.0.0.1:18081 -setup-only -provider openai -model gpt-4o-mini -runtime "$RUNTIME")"

if [ "$PROFILE" != 0 ]; then
  (sleep 2; curl -s -o /tmp/yardstick.cpu.pprof "http://127.0.0.1:16060/debug/pprof/profile?seconds=$PROFILE") & PROFILER=$!; pids+=($PROFILER)
  [ -n "${TRACE:-}" ] && { (sleep 3; curl -s -o /tmp/yardstick.trace "http://127.0.0.1:16060/debug/pprof/trace?seconds=1") & pids+=($!); }
fi
echo "== platform (SQLite unless AP_DATABASE_URL), $RUNTIME agent, n=$N c=$C" >&2
"$OUT/driver" -target agentplatform -base http://127.0.0.1:18081 -key "$KEY" -agent-id "$AGENT" -pid "$SERVER" \
  -n "$N" -c "$C" -warmup 50 -llm http://127.0.0.1:18080 | tee "$OUT/platform.txt"

if [ "$LIMIT" = 1 ]; then
  "$OUT/limit" -addr 127.0.0.1:18090 -llm http://127.0.0.1:18080/v1 >"$OUT/limit.log" 2>&1 & pids+=($!)
  wait_up http://127.0.0.1:18090/
  echo "== limit, n=$N c=$C" >&2
  "$OUT/driver" -target agentplatform -base http://127.0.0.1:18090 -key bench-key -n "$N" -c "$C" -warmup 50 | tee "$OUT/limit.txt"
fi
# The profiler, not the last process started (--limit's server runs on).
[ "$PROFILE" != 0 ] && wait "$PROFILER" 2>/dev/null || true
