"""``dask-ssl run --detach`` against real scheduler and worker processes, over TCP and TLS.

The submitting command is its own process and exits at once; the run goes on as a task on the
workers, which share this machine's filesystem (as a cluster shares storage), and is followed
through its state file.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dask_ssl.cli import main
from dask_ssl.workflow.runner import read_run, store_for

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[1]
DASK_SSL = [str(Path(sys.executable).parent / "dask-ssl")]


def submit(address, tmp_path, env=None, extra=()) -> Path:
    """Submit the quick start detached; return its run directory once the CLI exits.

    The data are small and the estimator the supervised L2SVM: what is tested here is the
    submission, not TSVM (test_workflow_run runs the quick start as shipped)."""
    cmd = [*DASK_SSL, "run", str(ROOT / "workflows" / "quickstart.yaml"),
           "--scheduler", address, "--detach",
           "--set", "data.params.n=600", "--set", "estimator={name: L2SVM}",
           "--set", f"outputs.runs={tmp_path / 'runs'}",
           "--set", f"outputs.model_store={tmp_path / 'models'}", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, **(env or {})))
    assert proc.returncode == 0, proc.stderr
    assert "the run goes on without this process" in proc.stderr
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert run_dir.is_absolute() and (run_dir / "state.json").is_file()
    return run_dir


def wait_finished(run_dir: Path, timeout: float = 150) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        _, state = read_run(run_dir)
        if state["status"] in ("finished", "failed") or time.monotonic() > deadline:
            return state
        time.sleep(0.5)


async def identify(address: str, ca_file: str) -> dict:
    """Ask the scheduler who it is over TLS, trusting ``ca_file`` but without a certificate."""
    from distributed.comm import connect

    ctx = ssl.create_default_context(cafile=ca_file)
    ctx.check_hostname = False
    comm = await connect(address, timeout=5, ssl_context=ctx)
    try:
        await comm.write({"op": "identity"})
        return await comm.read()
    finally:
        comm.abort()


def check_finished(run_dir: Path, capsys) -> None:
    state = wait_finished(run_dir)
    assert state["status"] == "finished", state.get("traceback")
    assert main(["status", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert ": finished" in out and "promoted" in out
    doc, _ = read_run(run_dir)
    store = store_for(doc)
    assert store.current() == state["result"]["version"]
    assert store.load().n_features_in_ == 50
    assert (run_dir / "report.json").is_file()


def test_detached_run_survives_the_submitting_process(real_cluster, tmp_path, capsys):
    procs = real_cluster(n_workers=2)
    t0 = time.monotonic()
    run_dir = submit(procs.address, tmp_path)
    print(f"submitted in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    check_finished(run_dir, capsys)
    print(f"finished in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    # The Dask performance report is made on the worker that ran the job, too.
    assert (run_dir / "dask-performance.html").stat().st_size > 0


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is needed to make certificates")
def test_detached_run_over_tls(dask_processes, tmp_path, capsys):
    from distributed import Client, Security

    certs = tmp_path / "certs"
    subprocess.run(["bash", str(ROOT / "cluster" / "tls" / "make-certs.sh"), str(certs)],
                   check=True, capture_output=True, timeout=60)
    # The shipped TLS configuration, pointed at the certificates just made.
    text = (ROOT / "cluster" / "tls" / "dask-tls.yaml").read_text()
    config = tmp_path / "dask-tls.yaml"
    config.write_text(text.replace("/etc/dask-ssl/tls", str(certs)))
    assert yaml.safe_load(config.read_text())["distributed"]["comm"]["require-encryption"]
    env = {"DASK_CONFIG": str(config)}
    security = Security(tls_ca_file=str(certs / "ca.pem"),
                        tls_client_cert=str(certs / "client.pem"),
                        tls_client_key=str(certs / "client-key.pem"), require_encryption=True)
    procs = dask_processes(2, scheduler_args=["--protocol", "tls"], env=env, security=security)
    assert procs.address.startswith("tls://")

    # A client that trusts the CA but shows no certificate of its own is refused, and so is
    # one that speaks plain TCP.
    with pytest.raises(OSError):
        asyncio.run(identify(procs.address, str(certs / "ca.pem")))
    with pytest.raises((OSError, TimeoutError)):
        Client(procs.address.replace("tls://", "tcp://"), timeout="3s", set_as_default=False)

    run_dir = submit(procs.address, tmp_path, env=env,
                     extra=["--set", "outputs.performance_report=false"])
    check_finished(run_dir, capsys)
