#!/usr/bin/env bash
# The deployment artefacts (Dockerfile, docker-compose.yml, charts/bloomgate), checked with what CI has:
# no container engine, no Helm, no cluster. Usage: deploy_test.sh PATH_TO_BLOOMGATE
#
# Needs docker-compose, python3-yaml and python3-jsonschema (scripts/install-deps installs them): a
# missing tool is a failure, not a skip. Python runs as Debian's /usr/bin/python3, where those packages
# install (a pyenv or venv python3 earlier on PATH would not see them); BLOOMGATE_TEST_PYTHON overrides.
set -uo pipefail
bin=$(realpath "$1")
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tests/deploy"
chart="$root/charts/bloomgate"
py=${BLOOMGATE_TEST_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root" || exit 1

failures=0
checks=0
ok() { checks=$((checks + 1)); echo "ok   $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $1${2:+: $2}"; }
check() {  # check NAME COMMAND...: passes when COMMAND exits 0; its output is shown on failure
  local name=$1 out
  shift
  if out=$("$@" 2>&1); then ok "$name"; else fail "$name" "$(tail -5 <<<"$out")"; fi
}
check_fails() {  # check_fails NAME COMMAND...: passes when COMMAND exits non-zero
  local name=$1
  shift
  if "$@" >/dev/null 2>&1; then fail "$name" "expected a failure, got exit 0"; else ok "$name"; fi
}
python_checks() {  # python_checks < SCRIPT: runs SCRIPT, which prints "ok   ..." / "FAIL ..." lines
  local out code
  out=$("$py" - "$@" 2>&1)
  code=$?
  [[ -n "$out" ]] && echo "$out"
  checks=$((checks + $(grep -c '^ok ' <<<"$out") + $(grep -c '^FAIL' <<<"$out")))
  failures=$((failures + $(grep -c '^FAIL' <<<"$out")))
  if ((code != 0)) && ! grep -q '^FAIL' <<<"$out"; then fail "python checks crashed" "exit $code"; fi
}

echo "== tools"
check "docker-compose is installed" command -v docker-compose
check "$py has yaml and jsonschema" "$py" -c 'import yaml, jsonschema'

echo "== docker-compose.yml"
check "docker-compose config -q accepts docker-compose.yml" docker-compose -f docker-compose.yml config -q
python_checks <<'PY'
import re, yaml, pathlib
def report(ok, name, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)))
compose = yaml.safe_load(open("docker-compose.yml"))
services = compose["services"]
unpinned = [f"{n}: {s.get('image')}" for n, s in services.items()
            if "image" in s and not re.fullmatch(r"[\w./-]+:v?\d+(\.\d+)+(-[\w.]+)?", s["image"])]
report(not unpinned, "every image is pinned to a version (no latest, no bare name)", unpinned)
kafka_env = services["kafka"]["environment"]
report(services["kafka"]["image"].startswith("apache/kafka:"), "Kafka is the apache/kafka image", services["kafka"]["image"])
pinned = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", open("scripts/kafka-pom.xml").read()).group(1)
kafka_images = {n: s["image"] for n, s in services.items() if s.get("image", "").startswith("apache/kafka:")}
report(set(kafka_images.values()) == {"apache/kafka:" + pinned},
       "every apache/kafka image is the Kafka version scripts/kafka tests against (scripts/kafka-pom.xml)",
       f"{kafka_images} vs {pinned}")
documented = set(re.findall(r"apache/kafka:[\w.-]+", open("docs/deployment.md").read()))
report(documented == {"apache/kafka:" + pinned}, "docs/deployment.md names that same apache/kafka image", documented)
report("controller" in kafka_env["KAFKA_PROCESS_ROLES"] and "broker" in kafka_env["KAFKA_PROCESS_ROLES"],
       "Kafka runs KRaft, one node as broker and controller", kafka_env["KAFKA_PROCESS_ROLES"])
factors = {k: v for k, v in kafka_env.items() if k.endswith("REPLICATION_FACTOR") or k.endswith("MIN_ISR")}
report(len(factors) >= 3 and all(str(v) == "1" for v in factors.values()), "replication factors and min ISR are 1", factors)
mounts = {v.split(":")[1]: v.split(":")[0] for v in services["bloomgate"]["volumes"] if v.startswith("./")}
config_path = mounts.get("/etc/bloomgate/config.yaml")
report(config_path is not None and pathlib.Path(config_path).is_file(),
       "bloomgate mounts an existing config file at /etc/bloomgate/config.yaml", mounts)
binds = [v.split(":")[0] for s in services.values() for v in s.get("volumes", []) if v.startswith("./")]
report(all(pathlib.Path(b).exists() for b in binds), "every bind-mounted path exists", [b for b in binds if not pathlib.Path(b).exists()])
report(services["bloomgate"].get("read_only") is True and any(v.endswith(":/var/lib/bloomgate") for v in services["bloomgate"]["volumes"]),
       "bloomgate: read-only root filesystem, a volume at /var/lib/bloomgate")
config = yaml.safe_load(open(config_path))
topics = set()
for p in config["pipelines"]:
    topics.update([p["input"]] if isinstance(p["input"], str) else p["input"])
    topics.update(p[k] for k in ("output", "duplicates", "dead_letter") if p.get(k))
init = "\n".join(services["kafka-init"]["command"])
created = set(re.search(r"for topic in ([^;]+);", init).group(1).split())
report(created == topics and "kafka-topics.sh" in init, "kafka-init creates exactly the pipeline's topics",
       f"creates {sorted(created)}, config names {sorted(topics)}")
report(f"--topic {sorted(config['pipelines'][0]['input'])[0]}" in "\n".join(services["producer"]["command"]),
       "the demo producer writes to the pipeline's input topic")
report(config["state"]["dir"] == "/var/lib/bloomgate", "compose config: state.dir is the state volume", config["state"]["dir"])
port = config["metrics"]["listen"].rsplit(":", 1)
report(port[0] == "0.0.0.0" and f"{port[1]}:{port[1]}" in services["bloomgate"]["ports"][0],
       "compose config: metrics listen on 0.0.0.0 at the published port", config["metrics"]["listen"])
prometheus = yaml.safe_load(open("deploy/compose/prometheus/prometheus.yml"))
targets = [t for job in prometheus["scrape_configs"] for sc in job.get("static_configs", []) for t in sc["targets"]]
report(f"bloomgate:{port[1]}" in targets, "Prometheus scrapes bloomgate's metrics port", targets)
prometheus_mounts = {v.split(":")[1]: v.split(":")[0] for v in services["prometheus"]["volumes"]}
report(prometheus_mounts.get("/etc/prometheus/rules") == "./charts/bloomgate/alerts"
       and "/etc/prometheus/rules/*.yaml" in prometheus.get("rule_files", []),
       "Prometheus loads the chart's alerting rules", (prometheus_mounts, prometheus.get("rule_files")))
grafana = {v.split(":")[1]: v.split(":")[0] for v in services["grafana"]["volumes"]}
provider = yaml.safe_load(open("deploy/compose/grafana/provisioning/dashboards/bloomgate.yaml"))["providers"][0]
report(grafana.get(provider["options"]["path"]) == "./charts/bloomgate/dashboards",
       "Grafana provisions dashboards from charts/bloomgate/dashboards", grafana)
datasource = yaml.safe_load(open("deploy/compose/grafana/provisioning/datasources/prometheus.yaml"))["datasources"][0]
report(datasource["url"] == "http://prometheus:9090" and datasource.get("uid"), "Grafana's datasource is the compose Prometheus, fixed uid")
PY
check "bloomgate validate accepts the compose config" "$bin" validate --config deploy/compose/bloomgate/config.yaml

echo "== charts/bloomgate"
python_checks "$chart" "$tmp/chart-config.yaml" <<'PY'
import json, sys, copy, yaml, jsonschema
chart, rendered_path = sys.argv[1], sys.argv[2]
def report(ok, name, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)))
schema = json.load(open(f"{chart}/values.schema.json"))
try:
    jsonschema.Draft7Validator.check_schema(schema); report(True, "values.schema.json is a valid draft-07 schema")
except jsonschema.SchemaError as e:
    report(False, "values.schema.json is a valid draft-07 schema", e.message)
validator = jsonschema.Draft7Validator(schema)
values = yaml.safe_load(open(f"{chart}/values.yaml"))
errors = [f"{'.'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(values)]
report(not errors, "values.yaml validates against values.schema.json", errors)
def rejected(name, change):
    bad = copy.deepcopy(values); change(bad)
    report(not validator.is_valid(bad), f"the schema rejects {name}")
rejected("replicaCount: \"three\"", lambda v: v.update(replicaCount="three"))
rejected("an unknown top-level key (replicas)", lambda v: v.update(replicas=3))
rejected("a config without pipelines", lambda v: v["config"].pop("pipelines"))
rejected("persistence.size: ten", lambda v: v["persistence"].update(size="ten"))
rejected("config.state.topic: \"a b\"", lambda v: v["config"]["state"].update(topic="a b"))
without_volumes = copy.deepcopy(values)
without_volumes["persistence"]["enabled"] = False
without_volumes["config"]["state"].update(topic="bloomgate-state", topic_replication_factor=3)
report(validator.is_valid(without_volumes), "the schema accepts the switch without volumes (persistence off, a state topic)")
listen_port = values["config"]["metrics"]["listen"].rsplit(":", 1)
report(listen_port == ["0.0.0.0", str(values["containerPorts"]["metrics"])],
       "config.metrics.listen is 0.0.0.0 at containerPorts.metrics", values["config"]["metrics"]["listen"])
report(values["config"]["state"]["dir"] == values["persistence"]["mountPath"], "config.state.dir is the persistent volume")
report(values["config"]["kafka"].get("instance_name") == "${env:POD_NAME}", "kafka.instance_name comes from the pod name")
c = values["containerSecurityContext"]
want = {"enabled": True, "runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
        "privileged": False, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
report(all(c.get(k) == v for k, v in want.items()), "restricted container security context", c)
p = values["podSecurityContext"]
report(p["seccompProfile"] == {"type": "RuntimeDefault"} and p["fsGroup"] == c["runAsGroup"],
       "pod: seccomp RuntimeDefault, fsGroup owns the state volume", p)
report(values["persistence"]["enabled"] and values["pdb"]["create"] and not values["serviceMonitor"]["enabled"],
       "defaults: a PVC per pod, a PodDisruptionBudget, ServiceMonitor off")
# What the ConfigMap holds: toYaml of .Values.config, which goes through JSON (sigs.k8s.io/yaml) and sorts keys.
with open(rendered_path, "w") as out:
    yaml.safe_dump(json.loads(json.dumps(values["config"])), out, sort_keys=True)
with open(rendered_path.replace(".yaml", "-state-topic.yaml"), "w") as out:
    yaml.safe_dump(json.loads(json.dumps(without_volumes["config"])), out, sort_keys=True)
PY
check "configmap.yaml embeds .Values.config with toYaml" \
  grep -qF 'toYaml .Values.config | nindent 4' "$chart/templates/configmap.yaml"
check "the chart's default config passes bloomgate validate (POD_NAME=bloomgate-0)" \
  env POD_NAME=bloomgate-0 "$bin" validate --config "$tmp/chart-config.yaml"
out=$(env -u POD_NAME "$bin" validate --config "$tmp/chart-config.yaml" 2>&1)
if [[ $? -ne 0 && "$out" == *"environment variable POD_NAME is not set"* ]]; then
  ok "the chart's config takes kafka.instance_name from \${env:POD_NAME}"
else
  fail "the chart's config takes kafka.instance_name from \${env:POD_NAME}" "$out"
fi
check "the config of the switch without volumes passes bloomgate validate" \
  env POD_NAME=bloomgate-0 "$bin" validate --config "$tmp/chart-config-state-topic.yaml"
check "NOTES.txt tells a release without volumes by its state topic" \
  grep -qF '{{- if and (not .Values.persistence.enabled) $stateTopic }}' "$chart/templates/NOTES.txt"
check "check_chart_values.py passes" "$py" "$here/check_chart_values.py" "$chart"
"$py" "$here/check_chart_values.py" "$chart" | sed 's/^/     /'
cp -r "$chart" "$tmp/mutated"
echo '{{ .Values.no.such.key }}' >>"$tmp/mutated/templates/pdb.yaml"
check_fails "check_chart_values.py catches a reference missing from values.yaml" "$py" "$here/check_chart_values.py" "$tmp/mutated"
cp -r "$chart" "$tmp/unbalanced"
echo '{{- if .Values.pdb.create }}' >>"$tmp/unbalanced/templates/pdb.yaml"
check_fails "check_chart_values.py catches an unbalanced if" "$py" "$here/check_chart_values.py" "$tmp/unbalanced"
for template in statefulset configmap service-headless service-metrics servicemonitor prometheusrule pdb serviceaccount; do
  check "templates/$template.yaml exists" test -f "$chart/templates/$template.yaml"
done
check "StatefulSet: checksum/config rolls pods on a config change" \
  grep -q 'checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}' "$chart/templates/statefulset.yaml"
check "StatefulSet: volumeClaimTemplates and the headless Service" \
  bash -c "grep -q 'volumeClaimTemplates:' '$chart/templates/statefulset.yaml' && grep -q 'serviceName: .*-headless' '$chart/templates/statefulset.yaml' && grep -q 'clusterIP: None' '$chart/templates/service-headless.yaml'"
check "StatefulSet: probes on /healthz, /readyz" \
  bash -c "grep -c 'path: /healthz' '$chart/templates/statefulset.yaml' | grep -qx 2 && grep -q 'path: /readyz' '$chart/templates/statefulset.yaml'"
check "StatefulSet: POD_NAME from the downward API" grep -q 'fieldPath: metadata.name' "$chart/templates/statefulset.yaml"
check "ServiceMonitor is behind serviceMonitor.enabled" \
  bash -c "head -1 '$chart/templates/servicemonitor.yaml' | grep -qx '{{- if .Values.serviceMonitor.enabled }}'"
check "PrometheusRule is behind prometheusRule.enabled" \
  bash -c "sed -n 2p '$chart/templates/prometheusrule.yaml' | grep -qx '{{- if .Values.prometheusRule.enabled }}'"
check "promtool check rules accepts the alerting rules" promtool check rules "$chart/alerts/bloomgate.rules.yaml"
check "the dashboards folder has its README" test -f "$chart/dashboards/README.md"
python_checks "$chart/dashboards" <<'PY'
import json, pathlib, sys
files = sorted(pathlib.Path(sys.argv[1]).glob("*.json"))
for f in files:
    try:
        d = json.loads(f.read_text())
        ok, detail = "__inputs" not in d and d.get("uid"), "has __inputs (unresolvable under provisioning) or no uid"
    except ValueError as e:
        ok, detail = False, e
    print(("ok   " if ok else "FAIL ") + f"dashboard {f.name} parses, fixed uid, no __inputs" + ("" if ok else f": {detail}"))
print(f"ok   {len(files)} dashboard JSON file(s) checked")
PY

echo "== Dockerfile"
python_checks <<'PY'
import re
def report(ok, name, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else ": " + str(detail)))
text = open("Dockerfile").read().replace("\\\n", " ")
stages = re.split(r"^FROM ", text, flags=re.M)
header, stages = stages[0], {re.search(r"AS (\w+)", s).group(1): s for s in stages[1:]}
arg = re.search(r"^ARG DEBIAN_IMAGE=(\S+)", header, re.M)
report(arg and re.fullmatch(r"debian:12\.\d+-slim", arg.group(1)), "the base is a pinned Debian 12 (bookworm) image", arg and arg.group(1))
report(set(stages) == {"build", "runtime"} and all(s.startswith("${DEBIAN_IMAGE} ") for s in stages.values()),
       "two stages, build and runtime, on the same base", list(stages))
build, runtime = stages.get("build", ""), stages.get("runtime", "")
report(re.search(r"^COPY scripts/install-deps \S+", build, re.M) and re.search(r"^RUN \S*scripts/install-deps", build, re.M),
       "build stage copies and runs scripts/install-deps")
report("apt-get install" not in build, "build stage installs nothing besides scripts/install-deps")
report("--target bloomgate" in build and "scripts/runtime-packages" in build, "build stage builds bloomgate and lists its runtime packages")
installs = re.findall(r"apt-get install[^&\n]*", runtime)
report(len(installs) == 1 and "xargs -a /tmp/runtime-packages.txt" in runtime
       and "COPY --from=build /out/runtime-packages.txt /tmp/runtime-packages.txt" in runtime,
       "runtime stage installs exactly the runtime-packages list from the build stage", installs)
user = re.findall(r"^USER (\S+)", runtime, re.M)
report(user and user[-1].split(":")[0].isdigit() and user[-1].split(":")[0] != "0", "runs as a numeric non-root user", user)
report(re.search(r'^VOLUME \["/var/lib/bloomgate"\]', runtime, re.M) and "install -d -o 10001 -g 10001 -m 0750 /var/lib/bloomgate" in runtime,
       "the state directory /var/lib/bloomgate is a volume owned by that user")
report('ENTRYPOINT ["/usr/local/bin/bloomgate"]' in runtime and 'CMD ["run", "--config", "/etc/bloomgate/config.yaml"]' in runtime,
       "entry point: bloomgate run --config /etc/bloomgate/config.yaml")
ignore = open(".dockerignore").read().split()
report("out/" in ignore and ".git" in ignore, ".dockerignore keeps build trees and .git out of the context")
PY
if runtime_packages=$(scripts/runtime-packages "$bin" 2>&1) && [[ -n "$runtime_packages" ]]; then
  ok "scripts/runtime-packages lists the binary's packages: $(tr '\n' ' ' <<<"$runtime_packages")"
else
  fail "scripts/runtime-packages lists the binary's packages" "$runtime_packages"
fi
# Each runtime package must come from the build's package list: a direct dependency of a package in
# scripts/install-deps, or one of the base image's own C/C++ runtime packages.
build_packages=$(bash -c 'source <(sed -n "/^packages=(/,/^)/p" scripts/install-deps); printf "%s\n" "${packages[@]}"')
provided=$(for p in $build_packages; do dpkg-query -W -f='${Depends}\n' "$p" 2>/dev/null; done |
  tr ',|' '\n\n' | sed 's/([^)]*)//; s/:any//; s/ //g' | sort -u)
for p in $runtime_packages; do
  if [[ " libc6 libgcc-s1 libstdc++6 " == *" $p "* ]] || grep -qx "$p" <<<"$provided"; then
    ok "runtime package $p corresponds to scripts/install-deps"
  else
    fail "runtime package $p corresponds to scripts/install-deps" "no package of scripts/install-deps depends on it"
  fi
done
for p in docker-compose python3-jsonschema python3-yaml; do
  check "scripts/install-deps installs $p" grep -qx "$p" <<<"$build_packages"
done

echo "deploy checks: $((checks - failures)) of $checks passed"
exit $((failures > 0))
