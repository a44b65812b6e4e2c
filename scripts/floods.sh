#!/usr/bin/env bash
# Measures password-hashing floods on the real binary with the real argon2id
# costs (19 MiB a hash): each case runs against a fresh server (so VmHWM is
# that case's peak) on embedded SQLite, and apbench -flood -check fails the
# script when a bound is broken (VmHWM < 300 MB, another user's GET
# /api/v1/users/me p50 < 100 ms, a burst gets at most AP_LOGIN_FAILURE_LIMIT
# 401s).
#
#   scripts/floods.sh [-n 300]
#
# The flood comes from 127.0.0.1, 127.0.0.3 and 127.0.0.4 (bound as local
# addresses, so the server sees three clients), the burst from 127.0.0.5,
# the other user from 127.0.0.2: Linux answers all of 127.0.0.0/8.
set -euo pipefail
cd "$(dirname "$0")/.."
N=300 PORT=${PORT:-18281}
while [ $# -gt 0 ]; do
  case $1 in
    -n) N=$2; shift 2 ;;
    *) echo "usage: $0 [-n N]" >&2; exit 2 ;;
  esac
done
OUT=$(mktemp -d /tmp/floods.XXXXXX)
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT

go build -o "$OUT/agentplatform" ./cmd/agentplatform
go build -o "$OUT/apbench" ./cmd/apbench
BASE=http://127.0.0.1:$PORT

# flood NAME "AP_VAR=… …" apbench-args…: one case on a fresh server.
flood() {
  local name=$1 vars=$2; shift 2
  rm -rf "$OUT/data"
  env AP_DATA_DIR="$OUT/data" AP_ADDR=127.0.0.1:$PORT AP_LOG_LEVEL=warn $vars \
    "$OUT/agentplatform" serve >"$OUT/server.log" 2>&1 & SERVER=$!
  for _ in $(seq 100); do curl -s -o /dev/null "$BASE/readyz" && break; sleep 0.1; done
  echo "== $name (${vars:-default settings})"
  "$OUT/apbench" -base "$BASE" -pid "$SERVER" -check "$@" || { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=; cat "$OUT/server.log" >&2; exit 1; }
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
}

flood "unknown-email logins" "" -flood logins -n "$N"
flood "unknown-email logins, failure limit out of the way: only the hashing bound holds" \
  "AP_LOGIN_FAILURE_LIMIT=1000000" -flood logins -n "$N"
flood "registrations" "" -flood register -n "$N"
flood "60 failed logins of one account from one address" "" -flood burst -n 60 -from 127.0.0.5 -limit 10
