#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# deploy/kubernetes/rtune-agent-daemonset.yaml: every absolute path the ConfigMap's agent.conf publishes to or keeps
# state in lies under a volumeMount of the agent container whose volume is a hostPath (so nfd-worker and
# node_exporter on the host see it), NFD's features.d is mounted from NFD's own host path, the devices are there, and
# the agent runs with the ConfigMap's file. 77: PyYAML is missing.
import sys

try:
    import yaml
except ImportError:
    print("PyYAML missing (apt-get install python3-yaml)")
    sys.exit(77)

docs = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = {d["kind"]: d for d in docs}
conf = kinds["ConfigMap"]["data"]["agent.conf"]
spec = kinds["DaemonSet"]["spec"]["template"]["spec"]
volumes = {v["name"]: v for v in spec["volumes"]}
agent = spec["containers"][0]
mounts = {m["mountPath"].rstrip("/"): m["name"] for m in agent["volumeMounts"]}


def fail(msg):
    print(msg)
    sys.exit(1)


def host_path(path):
    best = max((m for m in mounts if path == m or path.startswith(m + "/")), key=len, default=None)
    if best is None:
        fail("%s is under no volumeMount" % path)
    vol = volumes[mounts[best]]
    if "hostPath" not in vol:
        fail("%s is on volume %s, not a hostPath" % (path, vol["name"]))
    return vol["hostPath"]["path"].rstrip("/") + path[len(best):]


checked = 0
for line in conf.splitlines():
    line = line.strip()
    if not line or line.startswith("#") or "=" not in line:
        continue
    key, value = (s.strip() for s in line.split("=", 1))
    if (key.startswith("publish_") or key in ("store", "spool")) and value.startswith("/"):
        host_path(value)
        checked += 1
if checked < 5:
    fail("only %d paths in the ConfigMap" % checked)
nfd = host_path("/etc/kubernetes/node-feature-discovery/features.d/rtune")
if nfd != "/etc/kubernetes/node-feature-discovery/features.d/rtune":
    fail("features.d is not NFD's host path: %s" % nfd)
host_path("/dev/infiniband/uverbs0")
if "/etc/rtune/agent.conf" not in agent["command"] or volumes[mounts["/etc/rtune"]].get("configMap") is None:
    fail("the agent does not run with the ConfigMap's agent.conf")
print("ok: %d published paths on host paths" % checked)
