#!/usr/bin/env bash
# scripts/kafka's promises, checked on real brokers (ctest label `kafka`): `start` prints exactly one
# line `bootstrap: 127.0.0.1:PORT` once a client can use the broker, and stops it and exits 0 on SIGTERM;
# `--background` returns after that line and `stop` ends it; a restart on the same --port keeps the
# topics and records; two instances run at once in their own dirs; a kill -9 of the script leaves no
# broker; a start that cannot finish in --timeout fails with the broker's log and leaves no broker.
# Needs Java 17, Maven (or a filled cache) and python3. Every wait is bounded.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kafka="$root/scripts/kafka"
work=$(mktemp -d)
failures=0
checks=0
ok() { checks=$((checks + 1)); echo "ok   $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $1${2:+: $2}"; }
expect() { # expect NAME CONDITION-STATUS [DETAIL]
  if (($2 == 0)); then ok "$1"; else fail "$1" "${3:-}"; fi
}

cleanup() {
  for d in "$work"/*/; do "$kafka" stop --dir "$d" >/dev/null 2>&1; done
  rm -rf "$work"
}
trap cleanup EXIT

# The processes of the broker that runs in instance dir $1 (its command line names its properties file).
broker_processes() { pgrep -f "kafka.Kafka $1/server.properties" || true; }

# Waits at most $2 seconds for $1 to evaluate true (status 0); status 1 when it never does.
wait_for() {
  local deadline=$((SECONDS + $2))
  until eval "$1"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# Starts `scripts/kafka start` (foreground mode) for dir $1 in the background of this shell, extra
# arguments after it; sets `supervisor` and waits for its line (at most 150 s: the script's own 90 s
# bound, a first fetch and a format).
start_foreground() {
  local dir=$1
  shift
  mkdir -p "$dir"
  "$kafka" start --dir "$dir" "$@" >"$dir.stdout" 2>"$dir.stderr" &
  supervisor=$!
  wait_for "grep -q . '$dir.stdout' || ! kill -0 $supervisor 2>/dev/null" 150
}

topics() { "$kafka" tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --list 2>&1; }
record_count() { # the sum of the end offsets of topic $2's partitions
  "$kafka" tool org.apache.kafka.tools.GetOffsetShell --bootstrap-server "$1" --topic "$2" 2>/dev/null |
    awk -F: '{ n += $3 } END { print n + 0 }'
}

echo "== start in the foreground, a real client, SIGTERM"
a="$work/a"
start_foreground "$a"
line=$(cat "$a.stdout")
[[ $(wc -l <"$a.stdout") -eq 1 && $line =~ ^bootstrap:\ 127\.0\.0\.1:([0-9]+)$ ]]
expect "start prints exactly one line 'bootstrap: 127.0.0.1:PORT'" $? "stdout: $line; stderr: $(tail -3 "$a.stderr")"
address=${line#bootstrap: }
port=${address##*:}
[[ "$("$kafka" status --dir "$a")" == "running: $address" && "$(cat "$a/bootstrap" 2>/dev/null)" == "$address" ]]
expect "status and the bootstrap file name that address" $?
"$kafka" tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$address" --create --topic kept \
  --partitions 2 >/dev/null 2>&1
printf 'k1|one\nk2|two\nk3|three\n' | "$kafka" tool org.apache.kafka.tools.ConsoleProducer \
  --bootstrap-server "$address" --topic kept --property parse.key=true --property 'key.separator=|' >/dev/null 2>&1
count=$(record_count "$address" kept)
[[ $count == 3 ]]
expect "a Kafka client creates a topic and produces 3 records to it" $? "end offsets sum to $count"
kill -TERM "$supervisor"
wait_for "! kill -0 $supervisor 2>/dev/null" 45
wait "$supervisor"
status=$?
[[ $status == 0 && -z "$(broker_processes "$a")" ]]
expect "on SIGTERM it stops the broker and exits 0" $? "exit $status, left: $(broker_processes "$a")"

echo "== start --background on the same port keeps the data; a second instance at once"
out=$("$kafka" start --background --dir "$a" --port "$port" 2>"$a.stderr")
[[ $out == "bootstrap: $address" ]]
expect "start --background --port $port returns with that same line" $? "$out $(tail -3 "$a.stderr")"
count=$(record_count "$address" kept)
[[ $count == 3 ]]
expect "the restarted broker still has the topic and its 3 records" $? "end offsets sum to $count"
b="$work/b"
out_b=$("$kafka" start --background --dir "$b" 2>"$b.stderr")
address_b=${out_b#bootstrap: }
[[ $out_b =~ ^bootstrap:\ 127\.0\.0\.1:[0-9]+$ && $address_b != "$address" ]] && ! grep -qx kept <<<"$(topics "$address_b")"
expect "a second instance runs at once, on its own port, with its own data" $? "$out_b"
"$kafka" stop --dir "$a"
status=$?
[[ $status == 0 && -z "$(broker_processes "$a")" && "$("$kafka" status --dir "$a")" == stopped ]]
expect "stop ends the background instance, exit 0" $? "exit $status, left: $(broker_processes "$a")"
[[ -n "$(broker_processes "$b")" ]]
expect "stopping one instance leaves the other running" $?
"$kafka" stop --dir "$a"
expect "stop when none runs exits 0" $?
"$kafka" stop --dir "$b" >/dev/null

echo "== kill -9 of the script, a start that cannot finish in time"
start_foreground "$a" --port "$port"
kill -9 "$supervisor"
wait "$supervisor" 2>/dev/null
wait_for "[[ -z \"\$(broker_processes '$a')\" ]]" 10
expect "kill -9 of the foreground script leaves no broker (within 10 s)" $? "left: $(broker_processes "$a")"
"$kafka" start --background --dir "$a" --port "$port" >/dev/null 2>&1 && {
  read -r background _ <"$a/supervisor.pid"
  kill -9 "$background"
}
wait_for "[[ -z \"\$(broker_processes '$a')\" ]]" 10
expect "kill -9 of the background supervisor leaves no broker (within 10 s)" $? "left: $(broker_processes "$a")"
c="$work/c"
mkdir -p "$c"
"$kafka" start --dir "$c" --timeout 1 >"$c.stdout" 2>"$c.stderr"
status=$?
[[ $status != 0 && ! -s "$c.stdout" ]] && grep -q 'did not answer within 1 s' "$c.stderr" &&
  grep -q -- '^--- scripts/kafka start .*: broker 127.0.0.1:' "$c.stderr" && [[ -z "$(broker_processes "$c")" ]]
expect "a start that does not answer within --timeout fails, shows the log, leaves no broker" $? \
  "exit $status; $(tail -2 "$c.stderr")"

echo "scripts/kafka checks: $((checks - failures)) of $checks passed"
((failures == 0))
