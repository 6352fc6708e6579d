"""The kernel cache: where numba's compilations of dask-ssl's kernels go, when they are used
again, and that a fresh process with the cache in place compiles nothing."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from sklearn.datasets import dump_svmlight_file

import dask_ssl
from dask_ssl.kernel_cache import ALL_MODULES, FAMILIES, source_key
from dask_ssl.workflow.fit import ALGORITHMS, FAMILY

PACKAGE = Path(dask_ssl.__file__).parent

PROBE = '''
from numba import njit

from ._probe_helper import value


@njit(cache=True)
def probe(x):
    return x + value()
'''
HELPER = '''
from numba import njit


@njit(cache=True)
def value():
    return {}
'''
RUN_PROBE = textwrap.dedent("""
    import json
    from dask_ssl import _probe
    out = _probe.probe(1)
    print(json.dumps([out, sum(_probe.probe._cache_misses.values()),
                      _probe.probe._cache._cache_path]))
""")


def _package_with_probe(root: Path, helper_value: int, listed: bool = False) -> Path:
    """A copy of the package's cache machinery plus a kernel that inlines a helper from
    another module (what numba's own per-file check misses); ``listed``: the probe's call is
    in the package's list of kernels compiled ahead."""
    pkg = root / "dask_ssl"
    pkg.mkdir(parents=True, exist_ok=True)
    for name in ("__init__.py", "kernel_cache.py", "cachedir.py", "compile_once.py"):
        shutil.copy(PACKAGE / name, pkg / name)
    (pkg / "_probe.py").write_text(PROBE)
    (pkg / "_probe_helper.py").write_text(HELPER.format(helper_value))
    (pkg / "kernel_signatures.txt").write_text("dask_ssl._probe:probe\t(int64,)\n" if listed
                                               else "")
    return pkg


def _probe_env(root: Path, cache) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root), DASK_SSL_KERNEL_CACHE=str(cache),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("DASK_SSL_COMPILE_AHEAD", None)
    return env


def _run_probe(root: Path, cache, stderr: bool = False, **env):
    out = subprocess.run([sys.executable, "-c", RUN_PROBE], capture_output=True, text=True,
                         env=dict(_probe_env(root, cache), **env), cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr
    return (json.loads(out.stdout), out.stderr) if stderr else json.loads(out.stdout)


def test_kernels_are_cached_outside_the_package_and_a_changed_source_is_rebuilt(tmp_path):
    root, cache = tmp_path / "site", tmp_path / "cache"
    pkg = _package_with_probe(root, 1)
    key = source_key(str(pkg))
    # compiled once, into the kernel cache (nothing written beside the source: a read-only
    # site-packages works the same), then loaded by the next process
    result, n_compiled, where = _run_probe(root, cache)
    assert (result, n_compiled) == (2, 1)
    assert Path(where).is_relative_to(cache / key)
    assert not list(pkg.rglob("*.nbi")) and not list(pkg.rglob("*.nbc"))
    assert _run_probe(root, cache)[:2] == [2, 0]
    # A change in the helper's module only: numba's own check (the probe's file) would load
    # the stale probe, which returns 2. The key changes, and the probe is compiled anew.
    (pkg / "_probe_helper.py").write_text(HELPER.format(2))
    assert source_key(str(pkg)) != key
    result, n_compiled, where = _run_probe(root, cache)
    assert (result, n_compiled) == (3, 1)
    assert not Path(where).is_relative_to(cache / key)


def test_first_import_compiles_the_listed_kernels_once_for_processes_started_together(tmp_path):
    root, cache = tmp_path / "site", tmp_path / "cache"
    pkg = _package_with_probe(root, 1, listed=True)
    key = source_key(str(pkg))
    # two processes import at once: one compiles (in child processes), the other waits for
    # it; neither compiles the probe itself, both load it
    procs = [subprocess.Popen([sys.executable, "-c", RUN_PROBE], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_probe_env(root, cache),
                              cwd=root) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert [json.loads(out)[:2] for out, _ in outs] == [[2, 0], [2, 0]]
    assert sum("dask-ssl: compiling" in err for _, err in outs) == 1
    (marker,) = (cache / key).glob("complete-*.json")
    assert json.loads(marker.read_text())["compiled"] >= 1
    assert json.loads(marker.read_text())["failed"] == []
    # a later process finds the marker: no message, nothing compiled
    (result, n_compiled, _), err = _run_probe(root, cache, stderr=True)
    assert (result, n_compiled, err) == (2, 0, "")
    # numba's code is per CPU: another CPU model sharing the directory compiles its own once
    (result, n_compiled, _), err = _run_probe(root, cache, stderr=True, NUMBA_CPU_NAME="generic")
    assert (result, n_compiled) == (2, 0) and "dask-ssl: compiling" in err
    assert len(list((cache / key).glob("complete-*.json"))) == 2
    # a changed source is a new key: compiled anew at the next import, not loaded stale
    (pkg / "_probe_helper.py").write_text(HELPER.format(2))
    (result, n_compiled, where), err = _run_probe(root, cache, stderr=True)
    assert (result, n_compiled) == (3, 0) and "dask-ssl: compiling" in err
    new_key = source_key(str(pkg))
    assert Path(where).is_relative_to(cache / new_key)
    assert [m.name for m in (cache / new_key).glob("complete-*.json")] == [marker.name]


def test_unwritable_kernel_cache_compiles_on_first_call_without_error(tmp_path):
    # a cache directory that cannot be created (its parent is a file; as root, permission
    # bits would not stop the writes): no compile at import, no message, the kernel compiles
    # on its first call in numba's own place
    root = tmp_path / "site"
    pkg = _package_with_probe(root, 1, listed=True)
    (tmp_path / "a-file").write_text("")
    (result, n_compiled, where), err = _run_probe(root, tmp_path / "a-file" / "kernels",
                                                  stderr=True)
    assert (result, n_compiled, err) == (2, 1, "")
    assert Path(where) == pkg / "__pycache__"


def test_kernel_cache_turned_off_leaves_numba_its_own_places(tmp_path):
    root = tmp_path / "site"
    pkg = _package_with_probe(root, 1)
    result, n_compiled, where = _run_probe(root, "off")
    assert (result, n_compiled) == (2, 1)
    assert Path(where) == pkg / "__pycache__"  # numba's place: beside the source


def test_every_algorithm_has_a_family_of_kernels():
    assert set(FAMILY) == set(ALGORITHMS)
    assert set(FAMILY.values()) == set(FAMILIES)
    assert all(set(modules) <= set(ALL_MODULES) for modules in FAMILIES.values())


#: One tiny ``dask-ssl fit`` of each family, run in one process; reports how many of the
#: package's cached kernels were compiled (not loaded) in it, and how many the fits themselves
#: had to load or compile after the kernels were made ready ahead.
FITS = textwrap.dedent("""
    import json, os, sys
    from dask_ssl.cli import main
    from dask_ssl.kernel_cache import ALL_MODULES, compile_ahead, _dispatchers
    import importlib

    def kernels():
        return [fn for name in ALL_MODULES
                for _, fn in _dispatchers(importlib.import_module(name))]

    ready, compiled_ahead = compile_ahead(ALL_MODULES)
    hits = sum(sum(fn._cache_hits.values()) for fn in kernels())
    data, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for algorithm, flags in json.loads(sys.argv[3]):
        assert main(["fit", "--workers", "2", "--data", data, "--algorithm", algorithm,
                     "--model-out", f"{out}/{algorithm}", "--outputs", f"{out}/{algorithm}.txt",
                     *flags]) == 0, algorithm
    compiled = sum(sum(fn._cache_misses.values()) for fn in kernels())
    loaded_late = sum(sum(fn._cache_hits.values()) for fn in kernels()) - hits
    print(json.dumps({"ready": ready, "compiled": compiled, "loaded_late": loaded_late}))
""")
#: (algorithm, flags): one of each family.
FAMILY_FITS = [("tsvm", []), ("kda", []), ("transduction", ["--n-neighbors", "5"]),
               ("laprls", ["--n-neighbors", "5", "--gamma-I", "0.1"])]


def test_fresh_process_with_the_cache_in_place_compiles_nothing_for_any_family(tmp_path):
    assert {FAMILY[a] for a, _ in FAMILY_FITS} == set(FAMILIES)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 6)) * (rng.random((240, 6)) < 0.7)
    y = np.where(X @ rng.normal(size=6) > 0, 1.0, -1.0)
    y[::3] = 0
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, y, str(data), zero_based=False)
    runs = []
    for k in range(2):  # the first fills the cache (when this session's has not)
        out = tmp_path / f"run{k}"
        done = subprocess.run([sys.executable, "-c", FITS, str(data), str(out),
                               json.dumps(FAMILY_FITS)],
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    second = runs[1]
    assert second["ready"] > 0
    assert second["compiled"] == 0  # everything loaded from the cache
    assert second["loaded_late"] == 0  # and made ready ahead of the fits that call it
