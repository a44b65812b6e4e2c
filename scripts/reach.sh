#!/usr/bin/env bash
# What an agent costs reached three ways, as ratios: BenchmarkReach's
# process CPU a call of an MCP tools/call and an OpenAI-compatible
# completion, each round divided by activate-and-wait's measured just
# before and just after it. This machine's speed wanders more between two
# runs than the differences measured, so only ratios taken in one round
# mean something; the medians are printed at the end.
#
#   scripts/reach.sh [-d sqlite|postgres] [-r ROUNDS] [-n CALLS]
#
# PostgreSQL needs AP_TEST_DATABASE_URL (as the tests do).
set -euo pipefail
cd "$(dirname "$0")/.."
db=sqlite rounds=8 calls=3000
while [ $# -gt 0 ]; do
	case $1 in
	-d) db=$2; shift 2 ;;
	-r) rounds=$2; shift 2 ;;
	-n) calls=$2; shift 2 ;;
	*) echo "usage: $0 [-d sqlite|postgres] [-r ROUNDS] [-n CALLS]" >&2; exit 2 ;;
	esac
done
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
echo "building the api test binary…" >&2
go test -c -o "$bin/api.test" ./internal/api/
cd internal/api
cpu() { "$bin/api.test" -test.run '^$' -test.bench "BenchmarkReach/$db/$1\$" -test.benchtime "${calls}x" | awk '/^Benchmark/ {print $5}'; }
for i in $(seq "$rounds"); do
	echo "round $i of $rounds…" >&2
	a1=$(cpu activate-wait) m=$(cpu mcp-call) o=$(cpu openai-completion) a2=$(cpu activate-wait)
	awk -v a1="$a1" -v a2="$a2" -v m="$m" -v o="$o" 'BEGIN {a = (a1 + a2) / 2; printf "activate %.3f ms  mcp %.3f ms (%.3f)  openai %.3f ms (%.3f)\n", a, m, m / a, o, o / a}'
done | tee "$bin/rounds"
median() { sort -n | awk '{v[NR] = $1} END {print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2}'; }
echo "median ratio to activate-and-wait: mcp $(awk '{gsub(/[()]/, "", $7); print $7}' "$bin/rounds" | median), openai $(awk '{gsub(/[()]/, "", $11); print $11}' "$bin/rounds" | median)"
