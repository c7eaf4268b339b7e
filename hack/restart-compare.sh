#!/bin/bash
# Alternating restarts of two server binaries on one kept data dir: time
# from exec to /readyz 200, and RSS after 10 s, two rounds.
# Usage: hack/restart-compare.sh DATA-DIR BIN... (see docs/performance.md, Memory)
data=$1; shift
for round in 1 2; do
  for bin in "$@"; do
    t0=$(date +%s.%N)
    KUBECONFIG= $bin --data-dir $data --listen 127.0.0.1:18181 --log-level warn --retention 0 >> $(dirname $data)/restart.log 2>&1 &
    pid=$!
    until curl -sf -o /dev/null http://127.0.0.1:18181/readyz; do sleep 0.02; done
    t1=$(date +%s.%N)
    sleep 10
    rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status)
    echo "round $round $(basename $bin): ready $(echo "$t1 - $t0" | bc) s, RSS after 10 s $((rss/1024)) MiB"
    kill -TERM $pid; wait $pid
  done
done
