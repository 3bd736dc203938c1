#!/usr/bin/env bash
# demo: replay the ABCD sample conversations against a running `agentmemory dev` (make run),
# with no other set-up: creates a space on the dev's data dir (--direct-put: its documents are
# PUT directly), turns working memory on, declares the replay agent's type, mints an agent key
# and replays. Keys are never printed.
#
# Environment: ADDR (127.0.0.1:8080) or AGENTMEMORY_URL, DATA_DIR (./data), DATASET
# (testdata/abcd/abcd_sample.json), BIN (./bin/agentmemory), AGENT (abcd-agent).
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-./bin/agentmemory}
URL=${AGENTMEMORY_URL:-http://${ADDR:-127.0.0.1:8080}}
DATA_DIR=${DATA_DIR:-./data}
DATASET=${DATASET:-testdata/abcd/abcd_sample.json}
AGENT=${AGENT:-abcd-agent}

if ! curl -fsS "$URL/healthz" >/dev/null 2>&1; then
  echo "demo: no API at $URL; start it first with: make run" >&2
  exit 1
fi
[ -x "$BIN" ] || { echo "demo: $BIN is missing; run: make build" >&2; exit 1; }

# The space and its admin key (every person role), printed once as JSON by the CLI.
space_json=$("$BIN" space create "abcd-demo-$(date +%Y%m%d-%H%M%S)" --direct-put --data-dir "$DATA_DIR")
space_id=$(sed -n 's/.*"space_id":"\([^"]*\)".*/\1/p' <<<"$space_json")
admin_key=$(sed -n 's/.*"admin_key":"\([^"]*\)".*/\1/p' <<<"$space_json")
[ -n "$space_id" ] && [ -n "$admin_key" ] || { echo "demo: space create printed no space/key" >&2; exit 1; }
echo "demo: space $space_id"

api() { # METHOD PATH [curl args...]: JSON call as the admin; fails on an error status.
  local method=$1 path=$2
  shift 2
  curl -fsS -X "$method" "$URL$path" -H "Authorization: Bearer $admin_key" -H 'Content-Type: application/json' "$@"
}

api PUT /v1/documents/features --data '{"agent_state": {"enabled": true}}' >/dev/null
"$BIN" replay --types "$AGENT" | api PUT /v1/documents/object-types --data-binary @- >/dev/null
echo "demo: working memory on; object type $AGENT declared"

key_json=$(api POST /v1/keys --data "{\"kind\":\"agent\",\"agent\":\"$AGENT\",\"vendor\":\"abcd\",\"scopes\":[\"agent_state\"]}")
agent_key=$(sed -n 's/.*"key":"\([^"]*\)".*/\1/p' <<<"$key_json")
[ -n "$agent_key" ] || { echo "demo: no agent key minted" >&2; exit 1; }
echo "demo: agent key minted for $AGENT"

AGENTMEMORY_URL=$URL AGENTMEMORY_KEY=$agent_key "$BIN" replay --dataset "$DATASET"
