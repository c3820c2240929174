#!/usr/bin/env bash
# service_bench --brokers on a fresh real Apache Kafka broker (scripts/kafka in a temporary directory):
# the run must finish and write its figures. On a real broker a new topic is in the metadata before every
# partition's log is loaded, so the service, assigned at once, would find its output partitions not yet
# served; the bench waits until each partition of every topic it creates answers ListOffsets.
#   service_bench_real_broker_test.sh SERVICE_BENCH SCRIPTS_KAFKA [takeover]
# With `takeover`: a tiny --takeover-keys run instead (a few thousand keys): every target has a figure and
# the takeovers restored from the state topic.
set -euo pipefail
bench=$1
kafka=$2
mode=${3:-rounds}
dir=$(mktemp -d)
trap '"$kafka" stop --dir "$dir" >/dev/null; rm -rf "$dir"' EXIT
line=$("$kafka" start --background --dir "$dir")
if [[ $mode == takeover ]]; then
  "$bench" --brokers "${line#bootstrap: }" --takeover-keys 5000 --flow-keys 3000 --flow-rate 500 --events 8000 \
    --partitions 4 --overhead-rounds 1 --checkpoint-ms 1000 --json "$dir/figures.json" >"$dir/out.txt"
else
  # 64 partitions: the broker loads a new topic's partition logs one after another, so the later ones lag.
  "$bench" --brokers "${line#bootstrap: }" --partitions 64 --events 64000 --rounds 1 --sample-ms 1 \
    --skip-breakdown --json "$dir/figures.json" >"$dir/out.txt"
fi
/usr/bin/python3 - "$dir/figures.json" "$mode" <<'PY'
import json, math, sys
figures = json.load(open(sys.argv[1]))
assert figures["broker"] == "external", figures["broker"]
finite = lambda v: isinstance(v, (int, float)) and math.isfinite(v)
if sys.argv[2] == "takeover":
    assert len(figures["targets"]) == 3, figures["targets"]
    for t in figures["targets"]:
        assert finite(t["reached"]) and t["result"] in ("PASS", "MISS"), t
    for t in figures["takeovers"]:
        assert t["state_read_bytes"] > 0 and t["rebuild_events"] == t["keys"], t
        c = t["compaction"]
        assert 0 < c["state_bytes_after"] <= c["state_bytes_before"] and finite(c["seconds"]), c
    assert figures["flow"]["from_state_topic"], figures["flow"]
else:
    for key in ("events_per_second_ratio", "cpu_per_event_ratio"):
        assert finite(figures[key]), f"{key}: {figures[key]}"
PY
echo "service_bench ($mode) on a real broker: ok"
