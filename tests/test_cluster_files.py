"""The deployment files in cluster/: they parse, their commands parse with the real command
lines, and they agree with each other and with the tests on image, ports and commands."""

from __future__ import annotations

import copy
import importlib.util
import re
import shlex
from pathlib import Path

import dask.config
import distributed  # noqa: F401  (loads distributed's configuration defaults)
import jsonschema
import pytest
import yaml
from distributed.cli.dask_scheduler import main as scheduler_cli
from distributed.cli.dask_worker import main as worker_cli

from dask_ssl.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "cluster"
IMAGE = "dask-ssl:0.1.0"
SCHEDULER_PORT = 8786


def load(name):
    return yaml.safe_load((CLUSTER / name).read_text())


def check_command(args: list[str], container: bool = True) -> None:
    """Parse a command with the real CLI that would run it (nothing is started)."""
    if args[:2] == ["dask", "scheduler"]:
        scheduler_cli.make_context("dask scheduler", list(args[2:]))
    elif args[:2] == ["dask", "worker"]:
        worker_cli.make_context("dask worker", list(args[2:]))
    elif args[0] == "dask-ssl":
        parsed = build_parser().parse_args(args[1:])
        assert hasattr(parsed, "func")
        workflow = getattr(parsed, "workflow", None)
        if workflow is not None:
            # Images copy workflows/ to /opt/dask-ssl/workflows.
            assert workflow.startswith("/opt/dask-ssl/workflows/" if container else "workflows/")
            assert (ROOT / "workflows" / Path(workflow).name).is_file(), workflow
    else:
        raise AssertionError(f"unexpected command {args}")


def test_every_file_parses():
    files = [p for p in CLUSTER.rglob("*") if p.suffix in (".yaml", ".yml")]
    assert len(files) >= 8
    for path in files:
        assert list(yaml.safe_load_all(path.read_text())), path
    compile((CLUSTER / "slurm" / "run-on-slurm.py").read_text(), "run-on-slurm.py", "exec")
    assert (CLUSTER / "README.md").read_text().count("##") >= 5


def test_dockerfile_builds_what_the_services_run():
    text = (CLUSTER / "docker" / "Dockerfile").read_text()
    for line in ("COPY dask_ssl ./dask_ssl", "COPY workflows ./workflows",
                 "RUN pip install /opt/dask-ssl", "RUN dask-ssl compile",
                 f"EXPOSE {SCHEDULER_PORT}"):
        assert line in text
    assert IMAGE in text  # the build command in the header names the image the services use


def test_compose_services():
    for name in ("docker/compose.yaml", "docker/compose.tls.yaml"):
        compose = load(name)
        tls = "tls" in name
        services = compose["services"]
        assert set(services) == {"scheduler", "worker", "runner"}
        if not tls:
            for svc in services.values():
                assert svc["image"] == IMAGE
            assert services["scheduler"]["ports"] == [f"127.0.0.1:{SCHEDULER_PORT}:{SCHEDULER_PORT}"]
            assert services["worker"]["deploy"]["replicas"] == 2
        scheme = "tls" if tls else "tcp"
        sched, worker, runner = (services[k]["command"] for k in ("scheduler", "worker", "runner"))
        # The same programs and flags as tests/_procs.py and test_workflow_cluster.py use.
        assert sched[:2] == ["dask", "scheduler"] and str(SCHEDULER_PORT) in sched
        assert "127.0.0.1:8787" in sched  # dashboard only inside the container
        assert ("--protocol" in sched) == tls
        assert worker[:3] == ["dask", "worker", f"{scheme}://scheduler:{SCHEDULER_PORT}"]
        assert {"--nthreads", "--no-dashboard"} <= set(worker)
        assert runner[:2] == ["dask-ssl", "run"] and "--detach" in runner
        assert runner[runner.index("--scheduler") + 1] == f"{scheme}://scheduler:{SCHEDULER_PORT}"
        for command in (sched, worker, runner):
            check_command(command)


# Kubernetes ---------------------------------------------------------------------------------
def _operator_crd(kind: str) -> dict | None:
    """The Dask operator's published schema for ``kind`` when dask-kubernetes is installed."""
    spec = importlib.util.find_spec("dask_kubernetes")
    if spec is None or not spec.submodule_search_locations:
        return None
    crds = Path(spec.submodule_search_locations[0]) / "operator" / "deployment" / "helm" / \
        "dask-kubernetes-operator" / "crds"
    path = crds / f"{kind.lower()}.yaml"
    if not path.is_file():
        return None
    crd = yaml.safe_load(path.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]


REQUIRED = {
    "DaskCluster": [("spec", "worker", "spec", "containers"), ("spec", "worker", "replicas"),
                    ("spec", "scheduler", "spec", "containers"),
                    ("spec", "scheduler", "service", "ports")],
    "DaskJob": [("spec", "job", "spec", "containers"),
                ("spec", "cluster", "spec", "worker", "spec", "containers"),
                ("spec", "cluster", "spec", "scheduler", "spec", "containers"),
                ("spec", "cluster", "spec", "scheduler", "service", "ports")],
}


def _dig(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def operator_problems(doc: dict) -> list[str]:
    """Schema errors of a DaskCluster / DaskJob: the operator's CRD schema if it is installed,
    otherwise the keys the operator requires."""
    schema = _operator_crd(doc["kind"])
    if schema is not None:
        return [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(doc)]
    problems = []
    if doc.get("apiVersion") != "kubernetes.dask.org/v1" or not doc.get("metadata", {}).get("name"):
        problems.append("apiVersion kubernetes.dask.org/v1 and metadata.name are required")
    for path in REQUIRED[doc["kind"]]:
        try:
            value = _dig(doc, path)
        except (KeyError, TypeError, IndexError):
            problems.append(f"{'.'.join(path)} is required")
            continue
        if path[-1] == "containers" and not all(c.get("name") and c.get("image") for c in value):
            problems.append(f"{'.'.join(path)}: every container needs a name and an image")
    return problems


def containers(doc):
    if doc["kind"] == "CronJob":
        yield from doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        return
    cluster = doc["spec"]["cluster"]["spec"] if doc["kind"] == "DaskJob" else doc["spec"]
    if doc["kind"] == "DaskJob":
        yield from doc["spec"]["job"]["spec"]["containers"]
    yield from cluster["worker"]["spec"]["containers"]
    yield from cluster["scheduler"]["spec"]["containers"]


@pytest.mark.parametrize("name", ["daskcluster.yaml", "daskjob.yaml"])
def test_operator_manifests_validate(name):
    doc = load(f"kubernetes/{name}")
    assert operator_problems(doc) == []
    broken = copy.deepcopy(doc)
    workers = broken["spec"]["cluster"]["spec"] if doc["kind"] == "DaskJob" else broken["spec"]
    del workers["worker"]
    assert operator_problems(broken), "the check must catch a missing worker spec"


def test_kubernetes_files_agree():
    cluster = load("kubernetes/daskcluster.yaml")
    job = load("kubernetes/daskjob.yaml")
    cron = load("kubernetes/nightly-retrain-cronjob.yaml")
    pvc = load("kubernetes/shared-storage.yaml")
    assert cron["apiVersion"] == "batch/v1" and cron["kind"] == "CronJob"
    assert len(cron["spec"]["schedule"].split()) == 5
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    namespace = cluster["metadata"]["namespace"]
    for doc in (job, cron, pvc):
        assert doc["metadata"]["namespace"] == namespace
    for doc in (cluster, job, cron):
        for c in containers(doc):
            assert c["image"] == IMAGE
            args = [a.replace("$(DASK_SCHEDULER_ADDRESS)", f"tcp://x:{SCHEDULER_PORT}")
                     .replace("$(DASK_WORKER_NAME)", "w0") for a in c["args"]]
            check_command(args)
            if args[:2] == ["dask", "worker"]:
                assert {"--nthreads", "--no-dashboard"} <= set(args)
            if args[:2] == ["dask", "scheduler"]:
                assert args[args.index("--port") + 1] == str(SCHEDULER_PORT)
                assert args[args.index("--dashboard-address") + 1].startswith("127.0.0.1:")
    (retrain,) = containers(cron)
    assert retrain["args"][:2] == ["dask-ssl", "retrain"]
    # The CronJob reaches the DaskCluster's scheduler Service: NAME-scheduler.NAMESPACE.svc.
    address = retrain["args"][retrain["args"].index("--scheduler") + 1]
    assert address == (f"tcp://{cluster['metadata']['name']}-scheduler.{namespace}.svc:"
                       f"{SCHEDULER_PORT}")
    assert [p["port"] for p in cluster["spec"]["scheduler"]["service"]["ports"]] == [SCHEDULER_PORT]
    claims = {v["persistentVolumeClaim"]["claimName"]
              for doc in (cluster, job, cron) for v in _volumes(doc)}
    assert claims == {pvc["metadata"]["name"]}


def _volumes(doc):
    if doc["kind"] == "CronJob":
        return doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["volumes"]
    cluster = doc["spec"]["cluster"]["spec"] if doc["kind"] == "DaskJob" else doc["spec"]
    out = list(cluster["worker"]["spec"]["volumes"])
    if doc["kind"] == "DaskJob":
        out += doc["spec"]["job"]["spec"]["volumes"]
    return out


# configuration files -------------------------------------------------------------------------
def _flat(doc, prefix=()):
    for key, value in doc.items():
        if isinstance(value, dict):
            yield from _flat(value, prefix + (key,))
        else:
            yield prefix + (key,)


def _known(path) -> bool:
    node = {k: v for d in dask.config.defaults for k, v in d.items()}
    for key in path:
        if not isinstance(node, dict):
            return False
        node = {k.replace("_", "-"): v for k, v in node.items()}
        if key.replace("_", "-") not in node:
            return False
        node = node[key.replace("_", "-")]
    return True


@pytest.mark.parametrize("name", ["local.yaml", "tls/dask-tls.yaml"])
def test_dask_config_keys_exist(name):
    doc = load(name)
    unknown = [".".join(p) for p in _flat(doc) if not _known(p)]
    assert unknown == []


def test_tls_config_names_the_certificates_the_script_makes():
    comm = load("tls/dask-tls.yaml")["distributed"]["comm"]
    assert comm["require-encryption"] is True and comm["default-scheme"] == "tls"
    script = (CLUSTER / "tls" / "make-certs.sh").read_text()
    roles = re.search(r"for role in ([a-z ]+); do", script).group(1).split()
    assert roles == ["scheduler", "worker", "client"]
    assert Path(comm["tls"]["ca-file"]).name == "ca.pem"
    for role in roles:
        assert Path(comm["tls"][role]["cert"]).name == f"{role}.pem"
        assert Path(comm["tls"][role]["key"]).name == f"{role}-key.pem"


def test_slurm_configuration():
    conf = load("slurm/jobqueue.yaml")["jobqueue"]["slurm"]
    assert conf["cores"] == 1 and conf["processes"] == 1
    assert conf["worker-extra-args"] == ["--nthreads", "1", "--no-dashboard"]
    assert conf["scheduler-options"]["port"] == SCHEDULER_PORT
    assert conf["scheduler-options"]["dashboard_address"].startswith("127.0.0.1:")
    spec = importlib.util.find_spec("dask_jobqueue")
    if spec is not None:
        defaults = yaml.safe_load(
            (Path(spec.submodule_search_locations[0]) / "jobqueue.yaml").read_text())
        assert set(conf) <= set(defaults["jobqueue"]["slurm"])
    usage = (CLUSTER / "slurm" / "run-on-slurm.py").read_text()
    examples = re.findall(r"run-on-slurm\.py --jobs \d+ \\\n\s+-- (.*)", usage)
    assert len(examples) == 2
    for line in examples:
        check_command(["dask-ssl", *shlex.split(line), "--scheduler", "tcp://x:1"],
                      container=False)
