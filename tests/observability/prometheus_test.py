#!/usr/bin/env python3
"""What Prometheus and Grafana see of a running bloomgate.

Runs `bloomgate demo` (the service on the embedded broker, with a steady generated stream) and a real
Prometheus server (Debian's `prometheus` package) on loopback scraping it every second, then checks:
  1. /healthz answers 200 throughout; /readyz answers 503 before the service consumes and 200 while it does;
  2. `promtool check metrics` reports nothing on a scrape of the running service;
  3. every metric the dashboards name is exported by the service (a dashboard naming a metric the service
     does not export fails here, with its name);
  4. every expression of every dashboard panel, and the dashboards' variable queries, evaluated through
     Prometheus's HTTP API, returns data;
  5. the alerting rules (charts/bloomgate/alerts) load, and Prometheus evaluates every one of them without
     an error (health "ok" in /api/v1/rules) against the live series;
  6. the observed false-positive rate (probe keys never inserted) agrees with the estimated one within a
     factor of 1.5 either way. Tolerance: the demo probes 4 partitions x 5,000 keys per second, so a 10 s
     window holds ~200,000 probes and ~200 false positives at the 1e-3 target; the ratio's relative
     standard deviation is then ~7 %, and 1.5x is over 5 standard deviations.
Usage: prometheus_test.py BLOOMGATE_BINARY DASHBOARD_DIR RULES_FILE
Every wait is bounded; every process started is stopped on the way out.
"""
import json
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

RATE_INTERVAL = "5s"  # what Grafana's $__rate_interval becomes at a 1 s scrape interval (4 x scrape, rounded up)
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        return None, ""


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    check(False, f"{what} within {seconds} s")
    return False


def consumed_total(metrics_text):
    values = re.findall(r"^bloomgate_events_consumed_total\{[^}]*\} (\S+)$", metrics_text, re.M)
    return sum(float(v) for v in values)


def dashboard_queries(dashboard_dir):
    queries = []
    for path in sorted(pathlib.Path(dashboard_dir).glob("*.json")):
        dashboard = json.loads(path.read_text())
        for panel in dashboard.get("panels", []):
            for target in panel.get("targets", []):
                queries.append((f"{path.name}: {panel['title']} [{target['refId']}]", target["expr"]))
        for variable in dashboard.get("templating", {}).get("list", []):
            definition = variable.get("definition", "")
            match = re.fullmatch(r"label_values\((\w+),\s*\w+\)", definition)
            if match:
                queries.append((f"{path.name}: variable {variable['name']}", match.group(1)))
    return queries


def concrete(expr):
    return expr.replace("$__rate_interval", RATE_INTERVAL).replace('"$pipeline"', '".*"')


def metric_names(expr):
    names = set(re.findall(r"\bbloomgate_[a-z_]+", expr))
    return {re.sub(r"_(bucket|sum|count)$", "", n) if n.endswith(("_bucket", "_sum", "_count")) else n for n in names}


def exported_families(metrics_text):
    return set(re.findall(r"^# TYPE (\S+) ", metrics_text, re.M))


def prometheus_query(base, expr):
    status, body = http_get(base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    if status != 200:
        return None, f"HTTP {status}: {body[:200]}"
    answer = json.loads(body)
    return answer["data"]["result"], None


def scalar(base, expr):
    result, error = prometheus_query(base, expr)
    if error or not result:
        return None
    return float(result[0]["value"][1])


def check_rules(base, rules_file):
    status, body = http_get(base + "/api/v1/rules")
    groups = json.loads(body)["data"]["groups"] if status == 200 else []
    rules = [rule for group in groups for rule in group["rules"]]
    check(len(rules) > 0, f"Prometheus loaded {len(rules)} rules from {rules_file}")
    for rule in rules:
        check(rule["health"] == "ok" and rule.get("lastEvaluation", "").startswith("20"),
              f"rule {rule['name']} is evaluated without error" + (f" ({rule.get('lastError')})" if rule["health"] != "ok" else ""))


def main(binary, dashboard_dir, rules_file):
    work = pathlib.Path(tempfile.mkdtemp(prefix="bloomgate-prometheus-test-"))
    metrics_port, prometheus_port = free_port(), free_port()
    metrics = f"http://127.0.0.1:{metrics_port}"
    prometheus_base = f"http://127.0.0.1:{prometheus_port}"
    demo = subprocess.Popen([binary, "demo", "--events", "6000000", "--metrics-listen", f"127.0.0.1:{metrics_port}"],
                            stdout=open(work / "demo.out", "w"), stderr=subprocess.STDOUT)
    prometheus = None
    try:
        if not wait_for(lambda: http_get(metrics + "/healthz")[0] == 200, 30, "/healthz answers"):
            return
        check(http_get(metrics + "/readyz")[0] == 503, "/readyz is 503 before the service consumes")
        if not wait_for(lambda: consumed_total(http_get(metrics + "/metrics")[1]) > 0, 60, "the service consumes"):
            return
        check(http_get(metrics + "/readyz")[0] == 200, "/readyz is 200 while the service consumes")
        check(http_get(metrics + "/healthz")[0] == 200, "/healthz is 200 while the service consumes")

        scrape = http_get(metrics + "/metrics")[1]
        lint = subprocess.run(["promtool", "check", "metrics"], input=scrape, capture_output=True, text=True, timeout=30)
        check(lint.returncode == 0 and not (lint.stdout + lint.stderr).strip(),
              "promtool check metrics reports nothing" + (f": {lint.stdout}{lint.stderr}" if lint.returncode else ""))

        queries = dashboard_queries(dashboard_dir)
        check(len(queries) > 0, f"the dashboards hold {len(queries)} queries")
        exported = exported_families(scrape)
        for where, expr in queries:
            for name in sorted(metric_names(expr) - exported):
                check(False, f"{where} names {name}, which the service does not export")

        (work / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            f"rule_files: ['{pathlib.Path(rules_file).resolve()}']\n"
            f"scrape_configs:\n  - job_name: bloomgate\n    static_configs: [{{targets: ['127.0.0.1:{metrics_port}']}}]\n")
        prometheus = subprocess.Popen(
            ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}", "--log.level=warn"],
            stdout=open(work / "prometheus.out", "w"), stderr=subprocess.STDOUT)
        if not wait_for(lambda: scalar(prometheus_base, 'up{job="bloomgate"}') == 1, 60, "Prometheus scrapes bloomgate"):
            return
        time.sleep(15)  # enough samples for rate() over 5 s windows, and a 10 s window for the FPR comparison

        for where, expr in queries:
            result, error = prometheus_query(prometheus_base, concrete(expr))
            check(error is None and bool(result), f"{where} returns data" + (f" ({error})" if error else ""))

        check_rules(prometheus_base, rules_file)

        observed = scalar(prometheus_base, "sum(increase(bloomgate_filter_fpr_probe_hits_total[10s])) / "
                                           "sum(increase(bloomgate_filter_fpr_probes_total[10s]))")
        estimated = scalar(prometheus_base, "avg(avg_over_time(bloomgate_filter_estimated_fpr[10s]))")
        agree = observed is not None and estimated and 1 / 1.5 <= observed / estimated <= 1.5
        check(bool(agree), f"observed FPR {observed} agrees with the estimated {estimated} within 1.5x")
    finally:
        if prometheus:
            prometheus.terminate()
            prometheus.wait(timeout=30)
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=60)
        except subprocess.TimeoutExpired:
            demo.kill()
            check(False, "the demo stops within 60 s of SIGINT")
        if failures:
            print("demo output:\n" + (work / "demo.out").read_text()[-3000:])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
    print(f"prometheus checks: {len(failures)} failed")
    sys.exit(1 if failures else 0)
