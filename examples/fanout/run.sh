#!/bin/sh
# Starts the fan-out example on a running server (make run): a `process`
# action runs parent.sh, which enqueues 20 `sleep` children and waits for
# them through the run's event stream.
#
#   ./examples/fanout/run.sh [run-name]
#
# TASKACTIONS_URL defaults to http://127.0.0.1:8080, and TASKACTIONS_TOKEN
# to the admin token of the data dir (TASKACTIONS_DATA_DIR, default ./data).
set -eu
url="${TASKACTIONS_URL:-http://127.0.0.1:8080}"
token="${TASKACTIONS_TOKEN:-$(cat "${TASKACTIONS_DATA_DIR:-data}/api-token")}"
run="${1:-fanout-$(date +%s)}"
script="$(cd "$(dirname "$0")" && pwd)/parent.sh"
curl -sf -X POST "$url/api/v1/actions" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d "{
  \"action\": {
    \"actionId\": {\"run\": {\"project\": \"examples\", \"domain\": \"dev\", \"name\": \"$run\"}, \"name\": \"parent\"},
    \"task\": {\"taskTemplate\": {\"type\": \"process\", \"metadata\": {\"timeout\": \"2m\"},
      \"container\": {\"command\": [\"sh\", \"$script\"]}}}
  }}" >/dev/null
echo "run $run started: $url/projects/examples/domains/dev/runs/$run"
