#!/usr/bin/env bash
# service_bench --brokers on a fresh real Apache Kafka broker (scripts/kafka in a temporary directory):
# the run must finish and write its ratios. On a real broker a new topic is in the metadata before every
# partition's log is loaded, so the service, assigned at once, would find its output partitions not yet
# served; the bench waits until each partition of every topic it creates answers ListOffsets.
#   service_bench_real_broker_test.sh SERVICE_BENCH SCRIPTS_KAFKA
set -euo pipefail
bench=$1
kafka=$2
dir=$(mktemp -d)
trap '"$kafka" stop --dir "$dir" >/dev/null; rm -rf "$dir"' EXIT
line=$("$kafka" start --background --dir "$dir")
# 64 partitions: the broker loads a new topic's partition logs one after another, so the later ones lag.
"$bench" --brokers "${line#bootstrap: }" --partitions 64 --events 64000 --rounds 1 --sample-ms 1 \
  --skip-breakdown --json "$dir/figures.json" >"$dir/out.txt"
/usr/bin/python3 - "$dir/figures.json" <<'PY'
import json, math, sys
figures = json.load(open(sys.argv[1]))
assert figures["broker"] == "external", figures["broker"]
for key in ("events_per_second_ratio", "cpu_per_event_ratio"):
    value = figures[key]
    assert isinstance(value, (int, float)) and math.isfinite(value), f"{key}: {value}"
PY
echo "service_bench on a real broker: ok"
