"""The peers' first and second runs, each in a new process of the same interpreter, beside
``bench_first_fit.py``'s: what a user of each peer meets on day one against day two.

- LIBLINEAR ``-s 2 -B 1`` on KDD99 10%, all rows labeled (against ``--algorithm svm``);
- svmlin ``-A 2`` (TSVM) on KDD99 10% with the 1000 labels ``fit --labeled 1000 --seed 0``
  keeps, gamma 1e-3, gamma' 1, r the positive share of those labels (against ``tsvm``);
- ``LabelSpreading(kernel='knn', n_neighbors=10, n_jobs=2, max_iter=1000)`` on the 50 k sample
  with its 1000 labels (against ``transduction``);
- pynndescent's 10-NN graph of the 50 k sample, ``n_jobs=2`` (against the graph our
  ``transduction`` builds); its first run gets an empty ``NUMBA_CACHE_DIR`` (numba caches the
  functions pynndescent marks ``cache=True`` there), its second finds what the first wrote.

The peer processes import neither dask-ssl nor the benchmarks' helpers (Dask): each reads files
written once to the work folder (svmlight for LIBLINEAR and svmlin, ``.npz`` for the sample),
times its own fit (wall and the process's CPU, all threads) and prints it as JSON.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

SAMPLE_LABELS = 1000
GAMMA = 1e-3


def _timed(fit) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    fit()
    return {"fit": time.perf_counter() - t0, "fit_cpu": time.process_time() - c0}


def _liblinear(path: str) -> dict:
    from liblinear.liblinearutil import parameter, problem, train
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(path)
    prob = problem(y, X.tocsr())
    prob.set_bias(1)
    param = parameter(f"-s 2 -c {1.0 / (2.0 * GAMMA * len(y))!r} -B 1 -q")
    return _timed(lambda: train(prob, param))


def _label_spreading(path: str) -> dict:
    from sklearn.semi_supervised import LabelSpreading

    d = np.load(path)
    model = LabelSpreading(kernel="knn", n_neighbors=10, n_jobs=2, max_iter=1000)
    return _timed(lambda: model.fit(d["X"], np.where(d["y"] == 0, -1, d["y"])))


def _pynndescent(path: str) -> dict:
    from pynndescent import NNDescent

    X = np.load(path)["X"]
    return _timed(lambda: NNDescent(X, n_neighbors=11, n_jobs=2, random_state=0).neighbor_graph)


PEER_MAINS = {"liblinear": _liblinear, "labelspreading": _label_spreading,
              "pynndescent": _pynndescent}


def prepare(work: Path, sample: Path) -> dict:
    """Write (once) the peers' inputs: KDD99 10% as svmlight (with svmlin's example and label
    files, the split of ``fit --labeled 1000 --seed 0``) and the sample with its labels as npz."""
    from bench_cli import make_data

    from dask_ssl.data import read_kdd99
    from dask_ssl.workflow.split import choose

    full = make_data(SimpleNamespace(data="kdd99", replicate=1, rows=None, labels=SAMPLE_LABELS,
                                     seed=0), work)
    npz = work / f"{sample.name}.labels-{SAMPLE_LABELS}.npz"
    if not npz.exists():
        X, y = read_kdd99(str(sample))
        train = choose(y, test_fraction=0, seed=0, labeled=SAMPLE_LABELS).train_labels()
        X = X.toarray() if hasattr(X, "toarray") else X
        np.savez(npz, X=np.asarray(X, dtype=np.float64), y=train)
    labels = np.loadtxt(full["labels"])
    return {**full, "npz": npz, "r_labeled": float(np.mean(labels[labels != 0] > 0))}


def run_peer(python: str, name: str, data: dict, work: Path, env: dict) -> dict:
    """One run of peer ``name`` in a new process: its fit (wall, CPU) and the whole command's."""
    from _common import run_program
    from _common import run_svmlin as _run_svmlin

    if name == "svmlin":
        out = _run_svmlin(data["svmlin"], "tsvm", data["examples"], data["labels"],
                          Path(tempfile.mkdtemp(dir=work, prefix="svmlin-")), gamma=GAMMA,
                          gamma_u=1.0, r=data["r_labeled"], switches=data["u"] // 2)
        # svmlin prints its training time on its own (one-thread) CPU clock
        return {"fit": out["train"], "fit_cpu": out["train"], "wall": out["wall"],
                "cpu": out["cpu"]}
    source = data["svm"] if name == "liblinear" else data["npz"]
    wall, cpu, done = run_program([python, __file__, name, str(source)], env=env)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "wall": wall, "cpu": cpu}


def peer_pairs(python: str, names: list, work: Path, sample: Path, env: dict):
    """Yield ``(name, first, second)`` for each peer: two runs, each in a new process."""
    from _common import build_svmlin

    data = prepare(work, sample)
    if "svmlin" in names:
        data["svmlin"] = build_svmlin(work)
    for name in names:
        numba_dir = Path(tempfile.mkdtemp(dir=work, prefix="numba-"))
        pair_env = dict(env, NUMBA_CACHE_DIR=str(numba_dir))
        runs = [run_peer(python, name, data, work, pair_env) for _ in range(2)]
        shutil.rmtree(numba_dir)
        yield name, *runs


if __name__ == "__main__":
    print(json.dumps(PEER_MAINS[sys.argv[1]](sys.argv[2])))
