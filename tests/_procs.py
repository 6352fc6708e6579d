"""Real ``dask scheduler`` and ``dask worker`` processes on the loopback interface."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dask_ssl.linalg.workers import live_workers

BIN = Path(sys.executable).parent


def _dask_cmd() -> list[str]:
    exe = BIN / "dask"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "dask"]


class DaskProcesses:
    """A scheduler plus ``n_workers`` single-threaded workers, each its own OS process."""

    def __init__(self, workdir: Path, n_workers: int = 2, scheduler_args=(), worker_args=(),
                 env=None, security=None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.n_workers = n_workers
        self.scheduler_args = list(scheduler_args)
        self.worker_args = list(worker_args)
        self.env = dict(os.environ, **(env or {}))
        # The test process's own credentials when the processes speak TLS (a
        # ``distributed.Security``); the processes themselves get theirs from ``env``/args.
        self.security = security
        self.scheduler_file = self.workdir / "scheduler.json"
        self.scheduler = None
        self.workers: list[subprocess.Popen] = []

    def _spawn(self, args, name):
        log = open(self.workdir / f"{name}.log", "wb")
        return subprocess.Popen(_dask_cmd() + args, stdout=log, stderr=subprocess.STDOUT,
                                env=self.env, start_new_session=True)

    @property
    def address(self) -> str:
        return json.loads(self.scheduler_file.read_text())["address"]

    def start(self, timeout: float = 60) -> "DaskProcesses":
        self.scheduler = self._spawn(
            ["scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address", ":0",
             "--scheduler-file", str(self.scheduler_file), *self.scheduler_args], "scheduler")
        deadline = time.time() + timeout
        while not self.scheduler_file.exists():
            if time.time() > deadline or self.scheduler.poll() is not None:
                raise RuntimeError("dask scheduler did not start: "
                                   + (self.workdir / "scheduler.log").read_text())
            time.sleep(0.1)
        for _ in range(self.n_workers):
            self.add_worker()
        return self.ensure_workers(self.n_workers, timeout)

    def add_worker(self) -> subprocess.Popen:
        k = len(self.workers)
        proc = self._spawn(["worker", "--scheduler-file", str(self.scheduler_file), "--host",
                            "127.0.0.1", "--nthreads", "1", "--no-dashboard",
                            "--name", f"w{k}", *self.worker_args], f"worker{k}")
        self.workers.append(proc)
        return proc

    def client_kwargs(self) -> dict:
        return {} if self.security is None else {"security": self.security}

    def kill_worker(self, k: int) -> None:
        os.killpg(self.workers[k].pid, signal.SIGKILL)
        self.workers[k].wait()

    def kill_worker_at(self, client, address: str) -> None:
        """Kill (SIGKILL) the worker process listening at ``address``."""
        name = live_workers(client)[address]["name"]
        self.kill_worker(int(str(name).lstrip("w")))

    def alive(self) -> list[int]:
        return [k for k, proc in enumerate(self.workers) if proc.poll() is None]

    def ensure_workers(self, n_workers: int, timeout: float = 60) -> "DaskProcesses":
        """Make exactly ``n_workers`` worker processes run (start new ones in place of dead
        ones, or stop the newest), and wait until the scheduler lists exactly the live ones."""
        from distributed import Client

        n = self.n_workers = n_workers
        for k in self.alive()[n:]:
            os.killpg(self.workers[k].pid, signal.SIGTERM)
            self.workers[k].wait(timeout=timeout)
        for _ in range(n - len(self.alive())):
            self.add_worker()
        names = {f"w{k}" for k in self.alive()}
        deadline = time.time() + timeout
        with Client(self.address, timeout=timeout, set_as_default=False,
                    **self.client_kwargs()) as c:
            # running, not only registered: a worker registers before its plugins' setup
            # ends, and the scheduler gives it no task until then, so a test that killed
            # "one of three" might kill the only one at work
            while {w["name"] for w in live_workers(c).values()
                   if w["status"] == "running"} != names:
                if time.time() > deadline:
                    raise RuntimeError(f"workers {sorted(names)} did not all start")
                time.sleep(0.05)
        return self

    def stop(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            if proc is not None and proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in [*self.workers, self.scheduler]:
            if proc is not None:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
