"""Memory and load campaign on real ``dask scheduler`` / ``dask worker`` processes (127.0.0.1).

    .venv/bin/python benchmarks/load_campaign.py                       # all three scenarios
    .venv/bin/python benchmarks/load_campaign.py --only memory --rows 804414
    .venv/bin/python benchmarks/load_campaign.py --only concurrency
    .venv/bin/python benchmarks/load_campaign.py --only back-to-back --retrains 10

Scenarios (``--only`` takes a comma-separated list):

``memory``
    RCV1-like data (``rcv1_like``, ``--rows`` of them, 804,414 by default: full size), TSVM as
    in ``bench_s3vm.py rcv1`` (gamma = 1e-3, gamma' = 10, ``--labels`` stratified labels, r
    from the unlabeled rows) on two workers without a memory limit, then on two fresh workers
    whose ``--memory-limit`` is ``--limit-factor`` (1.5) times the first run's peak worker
    RSS and whose managed-memory target (``distributed.worker.memory.target``, a share of the
    limit; dask's default 0.6) holds ``--keep`` (0.6) of the bytes of blocks the unlimited
    workers held: above it the least recently used blocks go to disk as blocks are stored or
    read back, so the limited workers keep the rest of their blocks on disk and read them back
    on every round trip. Reading blocks back costs memory beyond holding them: at 1.15 times
    the peak, spilling at dask's default target (where only the process-memory rule, 70% of
    the limit, spills) got both workers terminated at 95% on the full-size data, and with 40%
    of the blocks spilled by the target one of two on half of it.
    Passes when both fits finish, no worker process was replaced (the nannies' worker
    processes keep their pids, the scheduler its worker addresses, the logs show no
    termination or restart), the limited run spilled (dask's ``disk-write`` bytes > 0) and the
    objectives agree to 1e-6 relative. Peak RSS is sampled every 0.2 s.
``concurrency``
    ``dask-ssl run workflows/quickstart.yaml`` and ``workflows/supervised.yaml`` against one
    running cluster, each alone; then two pairs started at once: quickstart + supervised, and
    quickstart twice (two runs saving and promoting into one model store). Each pair shares
    one runs and one model-store root. Passes when every run finishes, each concurrent run's
    objective, final metrics and swept metrics equal its solo run's (1e-6 relative), and each
    store holds one whole version per run (checksums verified) with the pointer on one of them.
``back-to-back``
    ``--retrains`` (10) nightly retrains in a row of ``workflows/nightly-retrain.yaml`` (one
    generated svmlight file of ``--day-rows`` rows per day, consecutive dates) against one
    persistent cluster, ``--drivers``: as ``dask-ssl retrain --date D --scheduler ADDRESS``
    processes (``cli``, as cron runs it) and as calls of ``retrain()`` in this process on one
    long-lived client (``in-process``, as a scheduler service would). After each retrain: RSS,
    open file descriptors and threads of the scheduler, nannies, workers (and the in-process
    driver); the scheduler's tasks and clients; the workers' stored keys, actors and dask-ssl
    worker-side state; the files under the model store, the run directories, the workers'
    local directories and the processes' ``TMPDIR``. Passes when, from retrain 2 (the first
    after the warm-up) to the last, no worker's (or driver's) RSS grew by more than 50 MiB,
    open descriptors and threads of every process did not grow at all, after every retrain
    the scheduler holds no task and no client of a finished retrain and no worker holds data,
    actors or state of one, the store and run directories grew by the same number of files
    per retrain and the local and temporary directories not at all.

The script prints each scenario's figures and verdict, and exits 1 if a criterion failed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from dask_ssl.linalg.workers import live_workers

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fault_campaign import same, write_clusters  # noqa: E402  (same directory)
from tests._procs import DaskProcesses  # noqa: E402  (real processes, as the cluster tests)

DASK_SSL = [sys.executable, "-m", "dask_ssl.cli"]
MB = 2**20


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# processes ---------------------------------------------------------------------------------
def worker_process(nanny_pid: int):
    """The worker process a ``dask worker`` nanny runs, or None (the nanny's other child is
    multiprocessing's resource tracker)."""
    import psutil

    try:
        for kid in psutil.Process(nanny_pid).children():
            if any("spawn_main" in part for part in kid.cmdline()):
                return kid
    except psutil.NoSuchProcess:
        pass
    return None


def proc_figures(proc) -> dict:
    """RSS (MiB), open file descriptors and threads of one process."""
    with proc.oneshot():
        return {"rss": proc.memory_info().rss / MB, "fds": proc.num_fds(),
                "threads": proc.num_threads()}


class PeakRSS:
    """Samples every worker process's RSS on a background thread; keeps the peak per worker
    and every worker pid seen under each nanny (a replaced worker shows as a second pid)."""

    def __init__(self, procs: DaskProcesses, every: float = 0.2):
        self.procs, self.every = procs, every
        self.peak = {}
        self.pids = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import psutil

        while not self._stop.is_set():
            for k, nanny in enumerate(self.procs.workers):
                proc = worker_process(nanny.pid)
                if proc is None:
                    continue
                try:
                    rss = proc.memory_info().rss / MB
                except psutil.NoSuchProcess:
                    continue
                self.pids.setdefault(f"w{k}", set()).add(proc.pid)
                self.peak[f"w{k}"] = max(self.peak.get(f"w{k}", 0.0), rss)
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _spill_metrics(dask_worker):
    """dask's spill counters of this worker: bytes and count written to / read from disk."""
    m = getattr(dask_worker.data, "cumulative_metrics", {})
    return {f"{label}-{unit}": float(v) for (label, unit), v in m.items()
            if label in ("disk-write", "disk-read")}


def _managed_bytes(dask_worker):
    from dask.sizeof import sizeof

    data = dask_worker.data
    fast = getattr(data, "fast", data)
    return int(sum(sizeof(v) for v in fast.values()))


def log_events(procs: DaskProcesses) -> dict:
    """Counts of dask's memory messages in the worker logs."""
    counts = {"paused": 0, "terminated": 0, "restarted": 0}
    for k in range(len(procs.workers)):
        text = (procs.workdir / f"worker{k}.log").read_text(errors="replace")
        counts["paused"] += text.count("Pausing worker")
        counts["terminated"] += text.count("exceeded 95% memory budget")
        counts["restarted"] += text.count("Restarting worker")
    return counts


# scenario 1: memory ------------------------------------------------------------------------
def tsvm_on_cluster(procs: DaskProcesses, args) -> dict:
    """Generate the RCV1-like rows on the cluster and fit the TSVM; the figures of the run."""
    from distributed import Client

    from dask_ssl.data import rcv1_like, stratified_split
    from dask_ssl.models import TSVM

    with Client(procs.address, set_as_default=False, direct_to_workers=True) as client:
        addresses = sorted(live_workers(client))
        with PeakRSS(procs) as peak:
            t0 = time.perf_counter()
            blocks = rcv1_like(n_rows=args.rows, client=client, n_blocks=args.blocks)
            y = blocks.gather_labels()
            made = time.perf_counter() - t0
            y_train = stratified_split(y, n_labeled=args.labels, seed=0).y_train(y, marker=0)
            r = float(np.mean(y[y_train == 0] > 0))
            share = client.run(_managed_bytes)
            est = TSVM(gamma_A=1e-3, gamma_u=10.0, pos_fraction=r, unlabeled=0, client=client)
            est.fit(blocks, y_train)
        spill = client.run(_spill_metrics)
        after = sorted(live_workers(client))
    return {"objective": float(est.objective_), "fit_seconds": est.fit_seconds_,
            "make_seconds": made, "stages": est.n_iter_, "peak_rss": peak.peak,
            "pids": {k: sorted(v) for k, v in peak.pids.items()},
            "share_mb": {a: b / MB for a, b in share.items()},
            "spill": spill, "same_workers": addresses == after, "log": log_events(procs)}


def scenario_memory(work: Path, args) -> tuple[bool, list[str]]:
    lines = []
    runs = {}
    limit = target = None
    for name in ("unlimited", "limited"):
        if name == "limited":
            free = runs["unlimited"]
            limit = int(args.limit_factor * max(free["peak_rss"].values()) * MB)
            target = round(args.keep * max(free["share_mb"].values()) * MB / limit, 3)
        # dask's managed-memory target: the share of the limit its stored blocks may hold
        # before the least recently used go to disk (see the docstring)
        env = {} if limit is None else {"DASK_DISTRIBUTED__WORKER__MEMORY__TARGET": str(target)}
        procs = DaskProcesses(work / f"mem-{name}", n_workers=2, env=env, worker_args=[
            "--memory-limit", str(limit or 0), "--local-directory", str(work / f"mem-{name}")])
        procs.start()
        try:
            what = "no limit" if limit is None else f"limit {limit / MB:.0f} MiB, target {target}"
            log(f"memory: {name} run ({what})")
            runs[name] = out = tsvm_on_cluster(procs, args)
        finally:
            procs.stop()
        written = sum(m.get("disk-write-bytes", 0.0) for m in out["spill"].values()) / MB
        read = sum(m.get("disk-read-bytes", 0.0) for m in out["spill"].values()) / MB
        out["spilled_mb"], out["unspilled_mb"] = written, read
        lines.append(
            f"memory/{name}: limit "
            f"{'none' if limit is None else f'{limit / MB:.0f} MiB, target {target}'}, "
            f"blocks in worker memory "
            f"{', '.join(f'{v:.0f}' for v in out['share_mb'].values())} MiB, "
            f"peak RSS {', '.join(f'{k} {v:.0f}' for k, v in sorted(out['peak_rss'].items()))}"
            f" MiB, "
            f"spilled {written:.0f} MiB (read back {read:.0f} MiB), "
            f"make {out['make_seconds']:.1f} s, fit {out['fit_seconds']:.1f} s, "
            f"{out['stages']} stages, objective {out['objective']!r}, "
            f"worker pids {out['pids']}, log {out['log']}")
    free, tight = runs["unlimited"], runs["limited"]
    fails = []
    for name, out in runs.items():
        if any(len(p) != 1 for p in out["pids"].values()) or not out["same_workers"]:
            fails.append(f"{name}: a worker process was replaced ({out['pids']})")
        if out["log"]["terminated"] or out["log"]["restarted"]:
            fails.append(f"{name}: the nanny terminated/restarted a worker ({out['log']})")
    if tight["spilled_mb"] <= 0:
        fails.append("limited: nothing was spilled (raise the pressure: lower --limit-factor)")
    if not same(tight["objective"], free["objective"]):
        fails.append(f"objective {tight['objective']!r} != {free['objective']!r} (1e-6 relative)")
    return not fails, lines + fails


# scenario 2: concurrency -------------------------------------------------------------------
def _run_args(work: Path, workflow: str, tag: str, address: str) -> list[str]:
    return [*DASK_SSL, "run", str(ROOT / "workflows" / workflow), "--scheduler", address,
            "--set", f"outputs.runs={work / tag / 'runs'}",
            "--set", f"outputs.model_store={work / tag / 'models'}"]


def _report(cmd_text: str, stdout: str) -> dict:
    """The report.json of a ``dask-ssl run`` from the path its summary prints."""
    lines = stdout.strip().splitlines()
    path = next((ln.split("report: ", 1)[1] for ln in lines if ln.startswith("report: ")), None)
    if path is None:
        raise RuntimeError(f"{cmd_text}: no report in its output:\n{stdout[-2000:]}")
    return json.loads(Path(path).read_text())


def _key_figures(rep: dict) -> dict:
    return {"objective": rep["estimator"]["objective"],
            "metrics": {k: v for k, v in rep["metrics"].items() if isinstance(v, float)},
            "sweep": [s["metrics"] for s in rep["sweep"]]}


def _figures_equal(a: dict, b: dict) -> bool:
    def flat(d):
        return [d["objective"], *[d["metrics"][k] for k in sorted(d["metrics"])],
                *[s[k] for s in d["sweep"] for k in sorted(s)]]

    return (sorted(a["metrics"]) == sorted(b["metrics"]) and len(a["sweep"]) == len(b["sweep"])
            and same(flat(a), flat(b)))


def _start(cmd: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _finish(proc: subprocess.Popen, name: str, timeout: float) -> dict:
    out, err = proc.communicate(timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} exited {proc.returncode}: {err[-2000:]}")
    return _report(name, out)


#: Pairs of workflows started at once; each pair shares one runs and one model-store root (the
#: same workflow twice: two runs saving and promoting into the same store).
PAIRS = [("quickstart.yaml", "supervised.yaml"), ("quickstart.yaml", "quickstart.yaml")]


def _store_check(root: Path, name: str, n: int) -> str | None:
    """None if the store ``root/name`` holds ``n`` versions and a pointer to one of them."""
    from dask_ssl.workflow.store import ModelStore

    store = ModelStore(root / name)
    versions = [v["version"] for v in store.versions()]
    if len(versions) != n or store.current() not in versions:
        return f"store {store.root}: versions {versions}, current {store.current()}"
    for v in versions:
        store.load(v)  # checksums verified
    return None


def scenario_concurrency(work: Path, args) -> tuple[bool, list[str]]:
    procs = DaskProcesses(work / "conc-cluster", n_workers=2)
    procs.start()
    lines, fails, solo = [], [], {}
    try:
        for wf in sorted({wf for pair in PAIRS for wf in pair}):
            t0 = time.perf_counter()
            rep = _finish(_start(_run_args(work, wf, f"solo-{wf}", procs.address), work),
                          f"solo {wf}", args.timeout)
            solo[wf] = _key_figures(rep)
            lines.append(f"concurrency/solo {wf}: {time.perf_counter() - t0:.1f} s, objective "
                         f"{solo[wf]['objective']!r}, metrics {solo[wf]['metrics']}")
        for k, pair in enumerate(PAIRS):
            t0 = time.perf_counter()
            running = [_start(_run_args(work, wf, f"pair{k}", procs.address), work)
                       for wf in pair]
            for wf, proc in zip(pair, running):
                try:
                    got = _key_figures(_finish(proc, f"concurrent {wf}", args.timeout))
                except Exception as exc:  # reported as a failed criterion
                    fails.append(f"pair {k} {wf}: {exc}")
                    continue
                ok = _figures_equal(solo[wf], got)
                lines.append(f"concurrency/pair {k} {' + '.join(pair)}: {wf} done "
                             f"{time.perf_counter() - t0:.1f} s after the start of both, "
                             f"objective {got['objective']!r}, identical to solo: {ok}")
                if not ok:
                    fails.append(f"pair {k} {wf}: concurrent {got} != solo {solo[wf]}")
            for wf in set(pair):
                name = wf.removesuffix(".yaml")
                bad = _store_check(work / f"pair{k}" / "models", name, pair.count(wf))
                if bad:
                    fails.append(f"pair {k}: {bad}")
        alive = procs.alive()
    finally:
        procs.stop()
    if len(alive) != 2:
        fails.append(f"workers alive at the end: {alive}")
    return not fails, lines + fails


# scenario 3: back-to-back retrains ---------------------------------------------------------
def _scheduler_figures(dask_scheduler, keep: list):
    # "fire-and-forget" is the scheduler's own pseudo-client; ``keep`` the snapshot's own and
    # an in-process driver's long-lived client
    clients = [c for c in dask_scheduler.clients if c not in ("fire-and-forget", *keep)]
    return {"tasks": len(dask_scheduler.tasks), "clients": len(clients)}


def _worker_figures(dask_worker):
    from dask_ssl.linalg import workerstate

    return {"keys": len(dask_worker.data), "actors": len(dask_worker.state.actors),
            "state": len(workerstate._STORE)}


def count_files(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def snapshot(procs: DaskProcesses, dirs: dict, driver=None, keep=()) -> dict:
    """Every figure the back-to-back criterion looks at, now (``driver``: this process, when
    the retrains run in it; ``keep``: ids of clients that stay connected on purpose)."""
    import psutil
    from distributed import Client

    snap = {} if driver is None else {"driver": proc_figures(driver)}
    snap["scheduler"] = proc_figures(psutil.Process(procs.scheduler.pid))
    for k, nanny in enumerate(procs.workers):
        snap[f"nanny{k}"] = proc_figures(psutil.Process(nanny.pid))
        snap[f"w{k}"] = proc_figures(worker_process(nanny.pid))
    with Client(procs.address, set_as_default=False) as c:
        sched = c.run_on_scheduler(_scheduler_figures, keep=[c.id, *keep])
        snap["cluster"] = {**sched, "workers": c.run(_worker_figures)}
    snap["files"] = {name: count_files(p) for name, p in dirs.items()}
    return snap


def write_day(path: Path, seed: int, rows: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_clusters(path, n=rows, d=20, n_labeled=rows // 10, seed=seed)


def _retrain_cli(base: Path, env: dict, address: str, timeout: float):
    """Each retrain a ``dask-ssl retrain`` process, run in ``base`` (the workflow's relative
    ``incoming/``, ``runs`` and ``models``), as cron runs it."""
    def run(day: dt.date) -> None:
        out = subprocess.run(
            [*DASK_SSL, "retrain", str(ROOT / "workflows" / "nightly-retrain.yaml"),
             "--date", day.isoformat(), "--scheduler", address],
            cwd=base, capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **env))
        if out.returncode != 0:
            raise RuntimeError(f"dask-ssl retrain --date {day} failed: {out.stderr[-2000:]}")
    return run


def _retrain_in_process(base: Path, client):
    """Each retrain a call of :func:`dask_ssl.workflow.retrain.retrain` in this process, on one
    long-lived client, as a scheduler service (Airflow, a notebook) would call it."""
    from dask_ssl.workflow.retrain import retrain
    from dask_ssl.workflow.spec import load_workflow

    doc = load_workflow(ROOT / "workflows" / "nightly-retrain.yaml", [
        f"data.path={base / 'incoming'}/{{date:%Y-%m-%d}}/*.svm",
        f"outputs.runs={base / 'runs'}", f"outputs.model_store={base / 'models'}"]).doc

    def run(day: dt.date) -> None:
        retrain(doc, date=day, client=client, progress=False)
    return run


def scenario_back_to_back(work: Path, args) -> tuple[bool, list[str]]:
    import psutil
    from distributed import Client

    tmp = work / "b2b-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env = {"TMPDIR": str(tmp)}
    procs = DaskProcesses(work / "b2b-cluster", n_workers=2, env=env,
                          worker_args=["--local-directory", str(work / "b2b-local")])
    first = dt.date(2026, 11, 1)
    days = [first + dt.timedelta(days=k) for k in range(args.retrains)]
    procs.start()
    ok, lines = True, []
    try:
        for mode in args.drivers.split(","):
            base = work / f"b2b-{mode}"
            for k, day in enumerate(days):
                write_day(base / "incoming" / day.isoformat() / "part-0.svm", seed=k,
                          rows=args.day_rows)
            dirs = {"models": base / "models", "runs": base / "runs",
                    "local": work / "b2b-local", "tmp": tmp}
            with contextlib.ExitStack() as stack:
                if mode == "cli":
                    run = _retrain_cli(base, env, procs.address, args.timeout)
                    driver, keep = None, ()
                else:
                    client = stack.enter_context(Client(procs.address, set_as_default=False))
                    run = _retrain_in_process(base, client)
                    driver, keep = psutil.Process(), (client.id,)
                snaps, seconds = [], []
                for k, day in enumerate(days):
                    t0 = time.perf_counter()
                    run(day)
                    seconds.append(time.perf_counter() - t0)
                    time.sleep(1.0)  # the scheduler notices a closed client
                    snaps.append(snapshot(procs, dirs, driver, keep))
                    s = snaps[-1]
                    log(f"back-to-back {mode} #{k + 1} ({seconds[-1]:.1f} s): " + ", ".join(
                        f"{n} rss {s[n]['rss']:.0f} fds {s[n]['fds']} thr {s[n]['threads']}"
                        for n in s if n not in ("cluster", "files"))
                        + f", cluster {s['cluster']}, files {s['files']}")
            good, got = judge_back_to_back(mode, snaps, seconds)
            ok &= good
            lines += got
    except Exception as exc:  # reported as a failed criterion
        return False, lines + [f"back-to-back: {exc}"]
    finally:
        procs.stop()
    return ok, lines


def judge_back_to_back(mode: str, snaps: list[dict],
                       seconds: list[float]) -> tuple[bool, list[str]]:
    lines, fails = [], []
    first, last = snaps[1], snaps[-1]
    n = len(snaps)
    names = [k for k in first if k not in ("cluster", "files")]
    for name in names:
        rss = [s[name]["rss"] for s in snaps]
        fds = [s[name]["fds"] for s in snaps]
        thr = [s[name]["threads"] for s in snaps]
        lines.append(f"back-to-back {mode}/{name}: RSS MiB {' '.join(f'{v:.0f}' for v in rss)}; "
                     f"fds {' '.join(map(str, fds))}; threads {' '.join(map(str, thr))}")
        grew = last[name]["rss"] - first[name]["rss"]
        if name[0] in "wd" and grew > 50:  # workers and the driver
            fails.append(f"{mode} {name}: RSS grew {grew:.0f} MiB from retrain 2 to {n}")
        for what in ("fds", "threads"):
            if last[name][what] > first[name][what]:
                fails.append(f"{mode} {name}: {what} grew from {first[name][what]} (retrain 2) to "
                             f"{last[name][what]} (retrain {n})")
    for k, s in enumerate(snaps):
        c = s["cluster"]
        held = {w: v for w, v in c["workers"].items() if any(v.values())}
        if c["tasks"] or c["clients"] or held:
            fails.append(f"{mode}, after retrain {k + 1}: the cluster still holds tasks "
                         f"{c['tasks']}, clients {c['clients']}, worker data/actors/state {held}")
    for d in first["files"]:
        counts = [s["files"][d] for s in snaps]
        steps = set(np.diff(counts).tolist())
        lines.append(f"back-to-back {mode}/files {d}: {' '.join(map(str, counts))}")
        if d in ("local", "tmp") and counts[-1] > counts[1]:
            fails.append(f"{mode} {d}: files grew from {counts[1]} to {counts[-1]}")
        if d in ("models", "runs") and len(steps) > 1:
            fails.append(f"{mode} {d}: files per retrain varied: {counts}")
    lines.append(f"back-to-back {mode}: retrain seconds {' '.join(f'{v:.1f}' for v in seconds)}")
    return not fails, lines + fails


# main --------------------------------------------------------------------------------------
SCENARIOS = {"memory": scenario_memory, "concurrency": scenario_concurrency,
             "back-to-back": scenario_back_to_back}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", default=",".join(SCENARIOS),
                   help=f"comma-separated scenarios among {', '.join(SCENARIOS)}")
    p.add_argument("--rows", type=int, default=804414, help="memory: RCV1-like rows")
    p.add_argument("--blocks", type=int, default=8, help="memory: row blocks")
    p.add_argument("--labels", type=int, default=1000, help="memory: labeled rows")
    p.add_argument("--limit-factor", type=float, default=1.5,
                   help="memory: limited workers' --memory-limit over the unlimited peak RSS")
    p.add_argument("--keep", type=float, default=0.6,
                   help="memory: share of a worker's blocks the limited workers' managed-memory "
                        "target holds (the rest spills)")
    p.add_argument("--retrains", type=int, default=10, help="back-to-back: retrains")
    p.add_argument("--drivers", default="cli,in-process",
                   help="back-to-back: retrains as `dask-ssl retrain` processes (cli), as calls "
                        "in this process on one client (in-process), or both")
    p.add_argument("--day-rows", type=int, default=4000, help="back-to-back: rows per day")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    p.add_argument("--workdir", help="keep the files here (default: a temporary directory)")
    args = p.parse_args(argv)
    wanted = [s for s in args.only.split(",") if s]
    unknown = [s for s in wanted if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenario(s) {unknown}; choose among {list(SCENARIOS)}")
    failed = []
    with tempfile.TemporaryDirectory(prefix="load-campaign-") as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name in wanted:
            print(f"== {name} (start: {uptime()})", flush=True)
            t0 = time.monotonic()
            ok, lines = SCENARIOS[name](work, args)
            for line in lines:
                print(line, flush=True)
            print(f"== {name}: {'PASS' if ok else 'FAIL'} in {time.monotonic() - t0:.0f} s "
                  f"(end: {uptime()})", flush=True)
            if not ok:
                failed.append(name)
    print(f"failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
