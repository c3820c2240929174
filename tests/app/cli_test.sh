#!/usr/bin/env bash
# The real binary, as a user runs it: exit codes, messages and output. Usage: cli_test.sh PATH_TO_BLOOMGATE
set -uo pipefail
bin=$1
failures=0
checks=0
check() {  # check NAME EXPECTED ACTUAL
  checks=$((checks + 1))
  if [[ "$2" == "$3" ]]; then echo "ok   $1"; else echo "FAIL $1: expected [$2], got [$3]"; failures=$((failures + 1)); fi
}

out=$(printf 'a\nb\na\n' | "$bin" filter); check "forwards new keys" $'a\nb' "$out"
version=$("$bin" --version); check "--version exits 0" 0 $?
# The binary links jemalloc (app/build_info.h): a build that loses it falls back to glibc malloc silently.
check "--version names jemalloc as the malloc" "jemalloc" "$(grep -o 'malloc: jemalloc' <<<"$version" | cut -d' ' -f2)"
printf 'a\n' | "$bin" filter >/dev/null; check "exit 0 on clean input" 0 $?

out=$(printf '1000\tx\nbad\n2000\tx\n' | "$bin" filter --timestamps 2>/tmp/bloomgate-cli-err.$$); code=$?
check "exit 1 when lines were skipped" 1 "$code"
check "output still complete" $'1000\tx' "$out"
check "malformed line named" "line 2: expected EPOCH_MILLIS<TAB>KEY, found no tab, skipped" "$(cat /tmp/bloomgate-cli-err.$$)"

err=$("$bin" filter --ttl 10 </dev/null 2>&1); code=$?
check "bad duration exits 2" 2 "$code"
check "bad duration explained" '--ttl: "10" has no unit: write ms, s, m, h or d, like 10s' "$(head -1 <<<"$err")"
err=$("$bin" filter --error-rate 0 </dev/null 2>&1); check "error rate 0 refused" 2 $?
check "error rate message" "bloomgate filter: --error-rate: must be in (0, 1), got 0.000000" "$err"
err=$("$bin" filter --type nope </dev/null 2>&1); check "unknown type refused" 2 $?

stats=$(printf 'a\nb\na\n' | "$bin" filter --stats 2>&1 >/dev/null)
check "stats is one line" 1 "$(wc -l <<<"$stats")"
python3 - "$stats" <<'PY' || failures=$((failures + 1))
import json, sys
s = json.loads(sys.argv[1])
missing = {"type", "k", "l", "slices", "bits", "memory_bytes", "elements", "bits_per_element", "cell_bits_per_element",
           "estimated_fpr"} - s.keys()
assert not missing, f"stats lack {missing}"
assert s["elements"] == 2 and s["duplicates"] == 1, s
print("ok   stats JSON has every field")
PY

for type in time_limited age_partitioned continuous scalable bloom spectral aging_fingerprint; do
  out=$(printf 'k1\nk2\nk1\n' | "$bin" filter --type "$type" 2>&1); check "--type $type" $'k1\nk2' "$out"
  # Every type's --stats: its whole memory, more than its cells, and the per-key figures drawn from both.
  stats=$(printf 'k1\nk2\nk1\n' | "$bin" filter --type "$type" --stats 2>&1 >/dev/null)
  python3 - "$type" "$stats" <<'PY' || failures=$((failures + 1))
import json, sys
name, s = sys.argv[1], json.loads(sys.argv[2])
n = s["elements"]
assert s["type"] == name and n > 0, s
assert s["memory_bytes"] * 8 > s["bits"] > 0, s
assert abs(s["bits_per_element"] - s["memory_bytes"] * 8 / n) <= 1e-5 * s["bits_per_element"], s
assert abs(s["cell_bits_per_element"] - s["bits"] / n) <= 1e-5 * s["cell_bits_per_element"], s
print(f"ok   --type {name} --stats: memory_bytes {s['memory_bytes']}, bits {s['bits']}")
PY
done

out=$(printf 't1\tx\te1\nt1\ty\te1\nt2\tx\te1\n' | "$bin" filter --fields 1,3); check "--fields keys by columns 1 and 3" $'t1\tx\te1\nt2\tx\te1' "$out"
out=$(printf 'a,1\nb,1\na,2\n' | "$bin" filter --fields 2 --delimiter ,); check "--delimiter , reads CSV" $'a,1\na,2' "$out"
err=$(printf 'a,b\n' | "$bin" filter --fields 3 --delimiter , 2>&1 >/dev/null); check "too few fields exits 1" 1 $?
check "too few fields is reported" "line 1: has 2 fields, --fields needs 3, skipped" "$err"
err=$("$bin" filter --fields 0 </dev/null 2>&1); check "--fields 0 refused" 2 $?
check "--fields 0 explained" '--fields: "0" is not a field number: fields are numbered from 1' "$(head -1 <<<"$err")"
err=$("$bin" filter --ttl 0 </dev/null 2>&1); check "--ttl 0 refused" 2 $?
check "--ttl 0 suggests a duration that works" '--ttl: "0" has no unit: write ms, s, m, h or d, like 90s' "$(head -1 <<<"$err")"
err=$("$bin" nope 2>&1); check "an unknown command exits 2" 2 $?
check "an unknown command is named" 'bloomgate: "nope" is not a command; the commands are filter, validate, run, demo, inspect (bloomgate --help, or bloomgate COMMAND --help)' "$err"

# Sizes: a count is 1 or more, and a filter may take at most 16 GiB when it is made (filters/options.h).
for expected in -5 0 12x; do
  err=$("$bin" filter --expected "$expected" </dev/null 2>&1); check "--expected $expected refused" 2 $?
  check "--expected $expected explained" "--expected: \"$expected\" is not a count of keys: expected a whole number from 1 to 18446744073709551615" "$(head -1 <<<"$err")"
done
err=$("$bin" filter --expected 18446744073709551615 </dev/null 2>&1); check "--expected 2^64-1 refused" 2 $?
check "--expected 2^64-1 says the memory it needs" "bloomgate filter: --expected: 18446744073709551615 keys need 89 GiB of filter memory (time_limited, error_rate 0.001, level 5: 89 slices), more than the 16 GiB a filter may take" "$err"
err=$("$bin" filter --type bloom --expected 18446744073709551615 </dev/null 2>&1); check "a bloom filter too large is refused" 2 $?
check "a bloom filter too large is explained" "bloomgate filter: bloom filter: expected_per_ttl and error_rate need more than 2^37 bits or 64 probes" "$err"
err=$("$bin" filter --delimiter ab </dev/null 2>&1); check "--delimiter of two characters refused" 2 $?
check "--delimiter message" '--delimiter: expected one character, \t or tab, found "ab"' "$(head -1 <<<"$err")"

# Read and write errors end the command with a message and exit 3, as uniq ends with one (exit 1): the
# output is incomplete. /dev/full fails every write with ENOSPC, as a full disk does.
err=$(seq 1 100000 | "$bin" filter 2>&1 >/dev/full); check "a write error exits 3" 3 $?
check "a write error is explained" "bloomgate filter: cannot write the output: No space left on device" "$err"
# A file that cannot grow (a full disk; here the file size limit, with SIGXFSZ ignored so write(2) fails).
err=$(trap '' XFSZ; ulimit -f 16; seq 1 100000 | "$bin" filter 2>&1 >/tmp/bloomgate-cli-big.$$); check "a file that cannot grow exits 3" 3 $?
check "a file that cannot grow is explained" "bloomgate filter: cannot write the output: File too large" "$err"
err=$("$bin" filter 2>&1 </ >/dev/null); check "stdin that is a directory exits 3" 3 $?
check "a read error is explained" "bloomgate filter: cannot read the input: Is a directory" "$err"

here=$(cd "$(dirname "$0")" && pwd)
example="$here/../../config/examples/bloomgate.yaml"
out=$("$bin" validate --config "$example"); check "validate accepts the example" 0 $?
check "validate prints the effective ttl" "    ttl: 10m" "$(grep -m1 'ttl:' <<<"$out")"
printf 'kafka: {brokers: k:9092}\npipelines: []\n' >/tmp/bloomgate-cli-bad.$$.yaml
err=$("$bin" validate --config /tmp/bloomgate-cli-bad.$$.yaml 2>&1); check "validate refuses a bad file" 2 $?
check "validate names the line" "bloomgate: invalid configuration: /tmp/bloomgate-cli-bad.$$.yaml:2:12: pipelines: expected a list of at least one pipeline" "$err"
# What the filters refuse stops validate and run alike, with exit 2 and the key's line and column.
printf 'kafka: {brokers: k:9092}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: value}, ttl: 1m, filter: {error_rate: 1e-300}}\n' >/tmp/bloomgate-cli-bad.$$.yaml
for command in validate run; do
  err=$("$bin" $command --config /tmp/bloomgate-cli-bad.$$.yaml 2>&1); check "$command refuses error_rate 1e-300" 2 $?
  check "$command names where error_rate 1e-300 is" "bloomgate: invalid configuration: /tmp/bloomgate-cli-bad.$$.yaml:3:88: pipelines[0].filter.error_rate: below 1e-12 is not supported, got 1e-300" "$err"
done
secret=$(KAFKA_PASSWORD=hunter2 "$bin" validate --config <(printf 'kafka:\n  brokers: k:9092\n  properties: {sasl.password: "${env:KAFKA_PASSWORD}"}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: value}, ttl: 1m}\n'))
check "validate never prints a secret" 0 "$(grep -c hunter2 <<<"$secret")"
check "validate shows where a secret comes from" '    sasl.password: ${env:KAFKA_PASSWORD}' "$(grep sasl.password <<<"$secret")"
parts=$("$bin" validate --config <(printf 'kafka: {brokers: k:9092}\npipelines:\n  - name: a\n    input: x\n    output: y\n    ttl: 1m\n    key:\n      parts:\n        - {from: json, pointer: /tenant, lowercase: true}\n        - {from: header, name: region}\n'))
check "validate prints the key parts" $'    key:\n      parts:\n        - {from: json, pointer: /tenant, lowercase: true}\n        - {from: header, name: region}\n      empty_is_error: true' "$(grep -A4 '^    key:' <<<"$parts")"

# The embedded broker's address on stdout, and a relative state.dir logged as the absolute path it is.
work=$(mktemp -d)
printf 'kafka: {brokers: embedded}\nstate: {dir: rel-state}\nmetrics: {listen: "127.0.0.1:0"}\npipelines:\n  - {name: a, input: [x], output: y, key: {from: value}, ttl: 1m}\n' >"$work/embedded.yaml"
bin_path=$(realpath "$bin")
(cd "$work" && timeout -s TERM 5 "$bin_path" run --config embedded.yaml >stdout 2>stderr)
check "run on the embedded broker prints its address" 1 "$(grep -c '^bloomgate: embedded Kafka broker at 127.0.0.1:[0-9]* for as long as this process runs; connect with kcat -b 127.0.0.1:[0-9]* -L$' "$work/stdout")"
check "run logs the absolute state directory" 1 "$(grep -c "state directory $work/rel-state (state.dir \"rel-state\", relative to the working directory)" "$work/stderr")"
rm -rf "$work"

# A filter that cannot be allocated (6.06 GiB under a 3 GB address-space limit) stops run with exit 1 and a
# message naming the pipeline, the memory and the key, not a bare std::bad_alloc. Not under a sanitizer,
# whose shadow memory needs more address space than the limit.
if ! grep -q __asan_init "$bin_path" && ! grep -q __tsan_init "$bin_path"; then
  work=$(mktemp -d)
  printf 'kafka: {brokers: embedded, embedded_partitions: 1}\nworkers: 1\nstate: {dir: st}\nmetrics: {listen: "127.0.0.1:0"}\npipelines:\n  - {name: big, input: [x], output: y, key: {from: value}, ttl: 1m, filter: {expected_per_ttl: 2000000000}}\n' >"$work/big.yaml"
  (cd "$work" && ulimit -v 3000000 && timeout 60 "$bin_path" run --config big.yaml >stdout 2>stderr); check "a filter too large for the memory exits 1" 1 $?
  check "a filter too large for the memory is explained" 1 "$(grep -c "pipeline big: cannot allocate a partition's filter of 6.06 GiB for filter.expected_per_ttl 2000000000: lower it, or give the process more memory" "$work/stderr")"
  rm -rf "$work"
fi

# A demo of a few events finishes between two of its 200 ms snapshots: its throughput is still measured.
out=$("$bin" demo --events 2000 --metrics-listen 127.0.0.1:0 2>/dev/null); check "a short demo is correct" 0 $?
check "a short demo prints the broker's address" 1 "$(grep -c '^embedded Kafka broker at 127.0.0.1:' <<<"$out")"
check "a short demo's throughput is not 0" "" "$(grep '^  throughput ' <<<"$out" | awk '$2 == "0"')"

# BLOOMGATE_FILTER_VECTOR_QUERY (filters/vector_query.h): off gives the same answers; a bad value stops every
# subcommand before it starts, the service before it reaches any broker.
out=$(printf 'a\nb\na\n' | BLOOMGATE_FILTER_VECTOR_QUERY=off "$bin" filter); check "the scalar query forwards new keys" $'a\nb' "$out"
err=$(printf 'a\n' | BLOOMGATE_FILTER_VECTOR_QUERY=fast "$bin" filter 2>&1); check "a bad query switch exits 2" 2 $?
check "a bad query switch explained" 'bloomgate: BLOOMGATE_FILTER_VECTOR_QUERY="fast": expected auto or off' "$err"
err=$(BLOOMGATE_FILTER_VECTOR_QUERY=fast timeout 20 "$bin" run --config "$example" 2>&1); check "run refuses a bad query switch" 2 $?
check "run explains a bad query switch" 'bloomgate: BLOOMGATE_FILTER_VECTOR_QUERY="fast": expected auto or off' "$err"

rm -f /tmp/bloomgate-cli-err.$$ /tmp/bloomgate-cli-bad.$$.yaml /tmp/bloomgate-cli-big.$$
echo "cli checks: $((checks - failures)) of $checks passed"
exit $((failures > 0))
