#!/usr/bin/env bash
# What an agent costs reached three ways, as ratios: BenchmarkReach's
# "paired" mode calls activate-and-wait, an MCP tools/call and an
# OpenAI-compatible completion in turn, 200 calls each, ROUNDS times in
# one process, and reports each way's process CPU a call and the two
# ratios to activate-and-wait. This machine's speed wanders by more
# between two runs of a minute than the differences measured; alternating
# every ~0.1 s cancels that. The run is repeated RUNS times (each a fresh
# process and database) and the medians are printed at the end.
#
#   scripts/reach.sh [-d sqlite|postgres] [-r ROUNDS] [-k RUNS]
#
# PostgreSQL needs AP_TEST_DATABASE_URL (as the tests do).
set -euo pipefail
cd "$(dirname "$0")/.."
db=sqlite rounds=60 runs=4
while [ $# -gt 0 ]; do
	case $1 in
	-d) db=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-k) runs=$2; shift 2 ;;
	*) echo "usage: $0 [-d sqlite|postgres] [-r ROUNDS] [-k RUNS]" >&2; exit 2 ;;
	esac
done
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
echo "building the api test binary…" >&2
go test -c -o "$bin/api.test" ./internal/api/
cd internal/api
for i in $(seq "$runs"); do
	echo "run $i of $runs ($rounds rounds)…" >&2
	"$bin/api.test" -test.run '^$' -test.bench "BenchmarkReach/$db/paired\$" -test.benchtime "${rounds}x" |
		awk '/^Benchmark/ {printf "activate %.3f ms  mcp %.3f ms (%.3f)  openai %.3f ms (%.3f)\n", $5, $7, $9, $11, $13}'
done | tee "$bin/runs"
median() { sort -n | awk '{v[NR] = $1} END {print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2}'; }
echo "median ratio to activate-and-wait: mcp $(awk '{gsub(/[()]/, "", $7); print $7}' "$bin/runs" | median), openai $(awk '{gsub(/[()]/, "", $11); print $11}' "$bin/runs" | median)"
