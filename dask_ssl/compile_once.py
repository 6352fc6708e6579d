"""Compiling dask-ssl's listed kernels once per install and machine, at the first import.

A fresh install has no compiled kernels, and numba compiles one kernel at a time per process
while holding the GIL: left to the first fit, compiling is most of it. So the first
``import dask_ssl`` that finds the kernel cache directory
(:func:`dask_ssl.kernel_cache.kernel_dir`, keyed by the package's kernel sources and the numba
and Python versions) without its completion marker for this CPU (:func:`marker_name`)
compiles every kernel call listed in ``kernel_signatures.txt`` into it, in one child process
per core, and writes the marker; a line on stderr says so and how long it took. Every later
process, worker processes included, finds the marker (one ``stat``) and loads kernels from the
cache when they are first called. A new release or an edited kernel changes the key, so the
next import compiles anew into a new directory.

Several processes importing at once (a cluster's workers, parallel jobs) share one compile: a
file lock in the directory lets one compile while the others wait for the marker; a process
that dies while compiling releases the lock, and the next import compiles again. A process
that already runs a Dask worker does not wait in the import (it would stall the worker's event
loop): it compiles in a background thread, which :class:`dask_ssl.cluster.WarmWorker` waits
for (:func:`wait`). Nothing happens, and kernels compile on their first call as numba does
by default, when the directory is off or cannot be written (a read-only install with no
writable cache), on a platform without ``fcntl``, or with ``DASK_SSL_COMPILE_AHEAD=off``
(which the child processes get).

Each child (:func:`_child`) takes the listed kernels one at a time, claiming each by creating
a file in a directory shared by the children (so no two compile the same kernel), and prints
how many it made ready and how many of those it compiled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from .kernel_cache import compile_job, kernel_dir, listed_jobs

#: Set to ``off`` (or 0, false, no) to never compile ahead at import.
ENV = "DASK_SSL_COMPILE_AHEAD"
_LOCK = ".compile.lock"
_BACKGROUND: list[threading.Thread] = []


def marker_name() -> str:
    """The completion marker's file name in the kernel directory: per CPU model and
    features, which numba's cached code is specific to (a shared disk, an image built on
    another host)."""
    import llvmlite.binding as ll
    from numba.core import config

    cpu = (ll.get_process_triple(), config.CPU_NAME or ll.get_host_cpu_name(),
           config.CPU_FEATURES or ll.get_host_cpu_features().flatten())
    return f"complete-{hashlib.sha256(repr(cpu).encode()).hexdigest()[:12]}.json"


def _turned_off() -> bool:
    return os.environ.get(ENV, "on").strip().lower() in ("off", "0", "false", "no", "")


def _in_dask_worker() -> bool:
    """Whether this process runs a Dask worker (importing here must not block its loop)."""
    worker = sys.modules.get("distributed.worker")
    return worker is not None and bool(getattr(worker.Worker, "_instances", ()))


def ensure_compiled() -> str:
    """Compile the listed kernels into this install's kernel directory unless its marker is
    there (see the module's text); return what happened: ``"ready"`` (marker found),
    ``"compiled"``, ``"waited"`` (another process compiled them), ``"background"``,
    ``"off"``, ``"unwritable"`` or ``"failed"``."""
    directory = kernel_dir() if not _turned_off() else None
    if directory is None:
        return "off"
    if os.path.exists(os.path.join(directory, marker_name())):
        return "ready"
    try:
        import fcntl  # noqa: F401  (POSIX: elsewhere kernels compile on first call)

        os.makedirs(directory, exist_ok=True)
        fd = os.open(os.path.join(directory, _LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        return "unwritable"
    if _in_dask_worker():
        thread = threading.Thread(target=_compile_locked, args=(fd, directory),
                                  name="dask-ssl-compile-once", daemon=True)
        _BACKGROUND.append(thread)
        thread.start()
        return "background"
    return _compile_locked(fd, directory)


def wait() -> None:
    """Return when a compile started in the background by :func:`ensure_compiled` is done."""
    for thread in list(_BACKGROUND):
        thread.join()


def _compile_locked(fd: int, directory: str) -> str:
    import fcntl

    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"dask-ssl: waiting for another process compiling the numba kernels into "
                  f"{directory}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(directory, marker_name())):
            return "waited"
        try:
            _compile_in_children(directory)
        except OSError as exc:  # ahead of time must never break an import
            print(f" failed ({exc}); kernels compile on their first call", file=sys.stderr)
            return "failed"
        return "compiled"
    finally:
        os.close(fd)  # releases the lock


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _compile_in_children(directory: str) -> None:
    jobs = listed_jobs()
    n = min(_cores(), len(jobs))
    if n == 0:
        _write_marker(directory, {"kernels": 0, "compiled": 0})
        return
    print(f"dask-ssl: compiling its numba kernels once for this version, {len(jobs)} in {n} "
          f"processes, into {directory} (a later process loads them) ...", end="",
          file=sys.stderr, flush=True)
    claims = tempfile.mkdtemp(prefix="dask-ssl-claims-")
    env = dict(os.environ, **{ENV: "off"})
    t0, c0 = time.perf_counter(), _children_cpu()
    try:
        code = f"from {__name__} import _child; _child({claims!r})"
        children = [subprocess.Popen([sys.executable, "-c", code], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for _ in range(n)]
        results = [child.communicate() for child in children]
    finally:
        shutil.rmtree(claims, ignore_errors=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    ready = compiled = 0
    failed = []
    for child, (out, err) in zip(children, results):
        try:
            counts = json.loads(out.strip().splitlines()[-1])
            ready, compiled = ready + counts["ready"], compiled + counts["compiled"]
        except (ValueError, IndexError, KeyError):
            failed.append(err.strip().splitlines()[-1:] or [f"exit {child.returncode}"])
    # The marker is written even after a failed child: what it left undone compiles on its
    # first call, where a missing marker would start this compile again in every process.
    summary = {"kernels": ready, "compiled": compiled, "wall_seconds": round(wall, 2),
               "cpu_seconds": round(cpu, 2), "processes": n, "failed": failed}
    _write_marker(directory, summary)
    print(f" done: {ready} kernels ready ({compiled} compiled) in {wall:.1f} s (CPU {cpu:.1f} s)"
          + (f"; failed: {failed}" if failed else ""), file=sys.stderr, flush=True)


def _write_marker(directory: str, summary: dict) -> None:
    tmp = os.path.join(directory, f"complete.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        json.dump(summary, f)
    os.replace(tmp, os.path.join(directory, marker_name()))


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _child(claims: str) -> None:
    ready = compiled = 0
    for k, job in enumerate(listed_jobs()):
        try:
            os.close(os.open(os.path.join(claims, str(k)), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            continue
        r, c = compile_job(*job)
        ready, compiled = ready + r, compiled + c
    print(json.dumps({"ready": ready, "compiled": compiled}))
