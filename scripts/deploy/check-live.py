#!/usr/bin/env python3
"""Checks the dashboard and the rules against a real Prometheus scraping a real `herald serve`.

    check-live.py PROMETHEUS_URL METRICS_FILE DASHBOARD_JSON RULES_YAML RULE_TESTS_YAML

- every metric name the dashboard and the rules use is one the server exported (METRICS_FILE: a scrape of its
  /metrics), except the ones an alert's description marks "Needs the metric …" (planned): those must be absent,
  so the note goes once the metric exists;
- every alert of the rules has a unit test;
- each target of each dashboard panel, with Grafana's variables filled in, returns at least one series with a
  number (not NaN) from Prometheus's /api/v1/query;
- each recording rule returns data, and Prometheus evaluated every rule without an error.
Prints one line per panel and rule; exits 1 listing what failed.
"""
import json
import math
import re
import sys
import urllib.parse
import urllib.request

import yaml

METRIC = re.compile(r"\b(herald_[a-z0-9_]+)\b")


def query(prometheus, expression):
    url = prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    with urllib.request.urlopen(url, timeout=10) as answer:
        body = json.load(answer)
    if body.get("status") != "success":
        raise RuntimeError(body.get("error", body))
    return body["data"]["result"]


def grafana_expression(expression):
    """The query Grafana would send for the dashboard's defaults: job herald, every instance, a 1-minute rate."""
    for variable, value in [("$__rate_interval", "1m"), ("$__interval", "15s"), ("$__range", "5m"),
                            ("$job", "herald"), ("$instance", ".*")]:
        expression = expression.replace(variable, value)
    if "$" in expression:
        raise RuntimeError("a Grafana variable this check does not know is left: " + expression)
    return expression


def exported_families(metrics_text):
    names = set()
    for line in metrics_text.splitlines():
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, 1)[0])
    families = set(names)
    for name in names:
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                families.add(name[: -len(suffix)])
    return names | families


def main():
    prometheus, metrics_file, dashboard_file, rules_file, tests_file = sys.argv[1:6]
    failures = []
    exported = exported_families(open(metrics_file).read())
    dashboard = json.load(open(dashboard_file))
    rules = yaml.safe_load(open(rules_file))
    tests = yaml.safe_load(open(tests_file))

    planned = set()
    alerts = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "alert" in rule:
                alerts.append(rule["alert"])
                planned |= set(re.findall(r"Needs the metric (herald_[a-z0-9_]+)", rule["annotations"].get("description", "")))
    used = {}
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            for name in METRIC.findall(target["expr"]):
                used.setdefault(name, set()).add("dashboard: " + panel["title"])
    for group in rules["groups"]:
        for rule in group["rules"]:
            for name in METRIC.findall(rule["expr"]):
                used.setdefault(name, set()).add("rule " + rule.get("alert", rule.get("record")))
    for name, users in sorted(used.items()):
        if name in planned:
            if name in exported:
                failures.append(f"{name} is exported now: drop the \"Needs the metric\" note of {sorted(users)}")
            else:
                print(f"  planned, not exported yet: {name} ({', '.join(sorted(users))})")
        elif name not in exported:
            failures.append(f"{name} ({', '.join(sorted(users))}) is not a metric the server exports")
    print(f"  {len(used) - len(planned & set(used))} metric names in the rules and dashboard, each exported by the server")

    tested = {case["alertname"] for test in tests["tests"] for case in test.get("alert_rule_test", [])
              if case.get("exp_alerts")}
    untested = sorted(set(alerts) - tested)
    if untested:
        failures.append(f"alerts without a unit test that makes them fire: {untested}")
    else:
        print(f"  each of the {len(alerts)} alerts has a unit test that makes it fire")

    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expression = grafana_expression(target["expr"])
            try:
                result = query(prometheus, expression)
            except Exception as error:  # a malformed query or Prometheus's refusal
                failures.append(f"panel \"{panel['title']}\" {target['refId']}: {error}")
                continue
            values = [float(series["value"][1]) for series in result]
            numbers = [value for value in values if not math.isnan(value)]
            if not numbers:
                failures.append(f"panel \"{panel['title']}\" {target['refId']} returned no data: {expression}")
                continue
            print(f"  panel \"{panel['title']}\" {target['refId']}: {len(result)} series, e.g. {numbers[0]:.4g}")

    for group in rules["groups"]:
        for rule in group["rules"]:
            if "record" in rule:
                result = query(prometheus, rule["record"])
                if result:
                    print(f"  recording rule {rule['record']}: {len(result)} series")
                else:
                    failures.append(f"recording rule {rule['record']} returned no data")
    with urllib.request.urlopen(prometheus + "/api/v1/rules", timeout=10) as answer:
        loaded = json.load(answer)["data"]["groups"]
    evaluated = [rule for group in loaded for rule in group["rules"]]
    broken = [f"{rule['name']}: {rule.get('lastError')}" for rule in evaluated if rule.get("health") != "ok"]
    if broken:
        failures.append(f"rules Prometheus could not evaluate: {broken}")
    else:
        print(f"  Prometheus evaluated all {len(evaluated)} rules without an error")
    firing = sorted({alert["labels"]["alertname"] for rule in evaluated for alert in rule.get("alerts", [])})
    print(f"  alerts pending or firing during the check: {', '.join(firing) or 'none'}")

    if failures:
        print("\n".join("  ✘ " + failure for failure in failures), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
