#!/bin/sh
# The parent task of the fan-out example. It runs as a `process` action:
# the server gives it TASKACTIONS_URL, a token for the API in
# TASKACTIONS_TOKEN (good for its own run, while this attempt runs) and its own
# identity in the environment. It enqueues $CHILDREN `sleep` children through the API, then
# follows the run's event stream until every child has succeeded.
set -eu
: "${CHILDREN:=20}"
api="$TASKACTIONS_URL/api/v1"
run="$api/projects/$TASKACTIONS_PROJECT/domains/$TASKACTIONS_DOMAIN/runs/$TASKACTIONS_RUN"

i=1
while [ "$i" -le "$CHILDREN" ]; do
  secs=$(( (i % 5) + 1 ))
  curl -sf -o /dev/null -X POST "$api/actions" -H "Authorization: Bearer $TASKACTIONS_TOKEN" -H 'Content-Type: application/json' -d "{
    \"action\": {
      \"actionId\": {\"run\": {\"project\": \"$TASKACTIONS_PROJECT\", \"domain\": \"$TASKACTIONS_DOMAIN\", \"name\": \"$TASKACTIONS_RUN\"}, \"name\": \"child-$i\"},
      \"parentActionName\": \"$TASKACTIONS_ACTION\",
      \"task\": {\"taskTemplate\": {\"type\": \"sleep\", \"custom\": {\"duration\": \"${secs}s\"}}}
    }}"
  i=$(( i + 1 ))
done
echo "enqueued $CHILDREN children"

# The stream sends each child's state as one `data:` line of JSON; count
# the children seen SUCCEEDED (once each) and stop at $CHILDREN. curl reads
# into a FIFO so that it can be stopped as soon as the count is reached.
fifo="$(mktemp -u)"
mkfifo "$fifo"
trap 'rm -f "$fifo"; kill "$curl" 2>/dev/null || true' EXIT
curl -sN -H "Authorization: Bearer $TASKACTIONS_TOKEN" "$run/events" > "$fifo" &
curl=$!
done=""
n=0
while [ "$n" -lt "$CHILDREN" ] && IFS= read -r line; do
  case "$line" in
    data:*'"phase":"SUCCEEDED"'*)
      name=$(printf '%s' "$line" | sed -n 's/.*"actionId":{"name":"\(child-[0-9]*\)".*/\1/p')
      [ -n "$name" ] || continue
      case " $done " in *" $name "*) continue ;; esac
      done="$done $name"
      n=$(( n + 1 ))
      echo "$name succeeded ($n/$CHILDREN)"
      ;;
  esac
done < "$fifo"
[ "$n" -ge "$CHILDREN" ] || { echo "the stream ended before every child succeeded" >&2; exit 1; }
echo "all $CHILDREN children succeeded"
