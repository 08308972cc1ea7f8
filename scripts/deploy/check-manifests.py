#!/usr/bin/env python3
"""Checks deploy/kubernetes beyond its schemas: what kubernetes-validate cannot see.

    check-manifests.py DIRECTORY SOURCES_DIRECTORY

The schemas say each object is well-formed; this says they fit together and fit Herald: every file is in
kustomization.yaml, selectors select the pods, named ports and referenced ConfigMaps, Secrets and keys exist, every
HERALD_* name is one the code reads, the server listens on 0.0.0.0 in a pod, several replicas use PostgreSQL, the pod
runs unprivileged, and the ServiceMonitor (a CRD without a bundled schema) has the fields the Prometheus Operator
needs. Prints one line per fact checked; exits 1 on the first list of problems.
"""
import os
import re
import sys

import yaml

problems = []


def check(condition, message):
    if not condition:
        problems.append(message)
    return condition


def main():
    directory, sources = sys.argv[1], sys.argv[2]
    kustomization = yaml.safe_load(open(os.path.join(directory, "kustomization.yaml")))
    listed = kustomization.get("resources", [])
    on_disk = sorted(f for f in os.listdir(directory) if f.endswith(".yaml") and f != "kustomization.yaml")
    check(sorted(listed) == on_disk, f"kustomization.yaml lists {sorted(listed)}, the folder holds {on_disk}")

    objects = {}
    for name in listed:
        for document in yaml.safe_load_all(open(os.path.join(directory, name))):
            if document:
                objects[(document["kind"], document["metadata"]["name"])] = document
    kinds = sorted({kind for kind, _ in objects})
    print(f"  {len(objects)} objects: {', '.join(kinds)}")
    for kind in ["ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
                 "ServiceMonitor"]:
        check(kind in kinds, f"no {kind} in {directory}")

    deployment = objects[("Deployment", "herald")]
    pod = deployment["spec"]["template"]
    pod_labels = pod["metadata"]["labels"]
    container = pod["spec"]["containers"][0]
    ports = {port["name"]: port["containerPort"] for port in container.get("ports", [])}

    def selects(selector, what):
        check(selector.items() <= pod_labels.items(), f"{what} selects {selector}, the pods carry {pod_labels}")

    selects(deployment["spec"]["selector"]["matchLabels"], "the Deployment")
    service = objects[("Service", "herald")]
    selects(service["spec"]["selector"], "the Service")
    for port in service["spec"]["ports"]:
        check(port["targetPort"] in ports or port["targetPort"] in ports.values(),
              f"the Service's targetPort {port['targetPort']} is no port of the container ({ports})")
    selects(objects[("PodDisruptionBudget", "herald")]["spec"]["selector"]["matchLabels"], "the PodDisruptionBudget")
    hpa = objects[("HorizontalPodAutoscaler", "herald")]
    target = hpa["spec"]["scaleTargetRef"]
    check((target["kind"], target["name"]) == ("Deployment", "herald"), f"the autoscaler scales {target}")
    check("cpu" in container.get("resources", {}).get("requests", {}),
          "the autoscaler scales on CPU utilisation, which needs the container's CPU request")
    print("  selectors, ports and the autoscaler's target fit the Deployment")

    # Every reference to a ConfigMap or a Secret, and its keys, exists.
    def data_keys(kind, name):
        document = objects.get((kind, name))
        if not check(document is not None, f"the Deployment refers to the {kind} {name}, which is not defined"):
            return set()
        return set(document.get("data", {})) | set(document.get("stringData", {}))

    environment = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            name = source["configMapRef"]["name"]
            environment.update(objects.get(("ConfigMap", name), {}).get("data", {}))
            data_keys("ConfigMap", name)
    for variable in container.get("env", []):
        environment[variable["name"]] = variable.get("value", "<from " + str(variable.get("valueFrom")) + ">")
        reference = variable.get("valueFrom", {}).get("secretKeyRef")
        if reference:
            check(reference["key"] in data_keys("Secret", reference["name"]),
                  f"{variable['name']} reads the key {reference['key']} of the Secret {reference['name']}, which it lacks")
    mounts = {mount["name"]: mount["mountPath"] for mount in container.get("volumeMounts", [])}
    for volume in pod["spec"].get("volumes", []):
        check(volume["name"] in mounts, f"the volume {volume['name']} is mounted nowhere")
        if "secret" in volume:
            keys = data_keys("Secret", volume["secret"]["secretName"])
            key_file = environment.get("HERALD_KEY_FILE", "")
            check(any(key_file == os.path.join(mounts.get(volume["name"], ""), key) for key in keys),
                  f"HERALD_KEY_FILE is {key_file}; the Secret volume holds {sorted(keys)} at {mounts.get(volume['name'])}")
    print(f"  ConfigMap and Secret references resolve; the pod's environment: {', '.join(sorted(environment))}")

    # The names the code reads: a HERALD_* name the server never reads is a setting that silently does nothing.
    known = set()
    for folder, _, files in os.walk(sources):
        for file in files:
            if file.endswith(".swift"):
                known |= set(re.findall(r'"(HERALD_[A-Z0-9_]+)"', open(os.path.join(folder, file)).read()))
    unknown = sorted(name for name in environment if name.startswith("HERALD_") and name not in known)
    check(not unknown, f"the code reads no {unknown} (names it reads: {sorted(known)})")
    print(f"  every HERALD_* name is read by the code ({len(known)} names in {sources})")

    check(environment.get("HERALD_LISTEN", "").startswith("0.0.0.0:"),
          "HERALD_LISTEN must be 0.0.0.0:PORT in a pod (the default 127.0.0.1 is unreachable from the Service)")
    listen_port = int(environment.get("HERALD_LISTEN", "0.0.0.0:0").rsplit(":", 1)[1])
    check(listen_port in ports.values(), f"the server listens on {listen_port}, the container declares {ports}")
    database = objects[("Secret", "herald-credentials")]["stringData"]["database-url"]
    if deployment["spec"]["replicas"] > 1 or hpa["spec"]["minReplicas"] > 1:
        check(database.startswith("postgres"), "several replicas need PostgreSQL, the database URL is " + database)
    print(f"  listens on {environment['HERALD_LISTEN']}; {deployment['spec']['replicas']} replicas on PostgreSQL")
    metrics_listen = environment.get("HERALD_METRICS_LISTEN", "")
    check(metrics_listen.startswith("0.0.0.0:"),
          "HERALD_METRICS_LISTEN must be 0.0.0.0:PORT in a pod: /metrics on a listener of its own (docs/security.md)")
    metrics_port = int(metrics_listen.rsplit(":", 1)[1])
    check(ports.get("metrics") == metrics_port,
          f"the container's port named metrics must be HERALD_METRICS_LISTEN's {metrics_port}: {ports}")
    check(metrics_port != listen_port, "HERALD_METRICS_LISTEN must not be the API's port")
    print(f"  /metrics on its own listener, {metrics_listen} (port metrics)")

    probes = {kind: container.get(kind, {}).get("httpGet", {}).get("path")
              for kind in ["startupProbe", "livenessProbe", "readinessProbe"]}
    check(probes["livenessProbe"] == "/health" and probes["readinessProbe"] == "/ready",
          f"probes should be /health (liveness) and /ready (readiness): {probes}")
    print(f"  probes: {probes} (their answers are checked against a real server later)")

    security = container.get("securityContext", {})
    pod_security = pod["spec"].get("securityContext", {})
    check(pod_security.get("runAsNonRoot") is True, "the pod must set runAsNonRoot")
    check(security.get("readOnlyRootFilesystem") is True, "the container must have a read-only root file system")
    check(security.get("allowPrivilegeEscalation") is False, "the container must not allow privilege escalation")
    check(security.get("capabilities", {}).get("drop") == ["ALL"], "the container must drop every capability")
    check("memory" in container.get("resources", {}).get("limits", {}), "the container needs a memory limit")
    grace = pod["spec"].get("terminationGracePeriodSeconds", 30)
    shutdown = int(environment.get("HERALD_SHUTDOWN_GRACE", "10"))
    check(grace > shutdown + 10, f"terminationGracePeriodSeconds {grace} leaves too little after HERALD_SHUTDOWN_GRACE")
    print("  unprivileged: non-root, read-only root, no capabilities, no escalation; memory limit; shutdown grace fits")

    monitor = objects[("ServiceMonitor", "herald")]
    check(monitor["apiVersion"] == "monitoring.coreos.com/v1", "the ServiceMonitor's apiVersion")
    check(monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items(),
          "the ServiceMonitor does not select the Service")
    service_ports = {port["name"] for port in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        check(endpoint.get("port") in service_ports, f"the ServiceMonitor scrapes the port {endpoint.get('port')}")
        check(endpoint.get("path") == "/metrics", "the ServiceMonitor must scrape /metrics")
        check(endpoint.get("port") == "metrics", "the ServiceMonitor must scrape the private metrics port, not the API's")
    job = service["metadata"]["labels"].get(monitor["spec"].get("jobLabel", ""), service["metadata"]["name"])
    check(job == "herald", f"the rules and dashboard expect job=\"herald\"; the ServiceMonitor makes job=\"{job}\"")
    print(f"  ServiceMonitor (no schema bundled for its CRD): selects the Service, scrapes /metrics as job=\"{job}\"")

    if problems:
        print("\n".join("  ✘ " + problem for problem in problems), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
