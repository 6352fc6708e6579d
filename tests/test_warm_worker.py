"""Worker start-up: numba kernels are compiled, or loaded from the disk cache, ahead of the
first task that needs them."""

import logging
import subprocess
import sys
import textwrap

import numpy as np
from distributed import Client, LocalCluster

from dask_ssl.cluster import WarmWorker
from dask_ssl.kernel_cache import compile_ahead
from dask_ssl.linalg import kernels


def test_fresh_process_loads_cached_kernels_without_calling_them():
    # this process compiles (or loads) the kernels, which leaves them in the disk cache
    kernels.loss_sum(np.zeros(3), np.ones(3), np.ones(3), np.zeros(3), np.zeros(3))
    compile_ahead(["dask_ssl.linalg.kernels"])
    code = textwrap.dedent("""
        from dask_ssl.cluster import warm_worker
        from dask_ssl.linalg import kernels
        assert warm_worker(("dask_ssl.linalg.kernels",)) >= 1
        sigs = kernels.loss_sum.signatures
        misses = dict(kernels.loss_sum._cache_misses)
        print(len(sigs), sum(misses.values()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    n_sigs, n_compiled = map(int, out.stdout.split())
    assert n_sigs >= 1  # loaded before any call
    assert n_compiled == 0  # from the cache, not compiled again


def test_background_load_of_named_modules_compiles_nothing():
    # what ``dask-ssl fit`` starts before its estimators are imported
    compile_ahead(["dask_ssl.linalg.kernels"])
    code = textwrap.dedent("""
        import sys
        from dask_ssl.kernel_cache import compile_in_background
        compile_in_background(["dask_ssl.linalg.kernels"]).join()
        kernels = sys.modules["dask_ssl.linalg.kernels"]
        print(len(kernels.loss_sum.signatures), sum(kernels.loss_sum._cache_misses.values()))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    n_sigs, n_compiled = map(int, out.stdout.split())
    assert n_sigs >= 1 and n_compiled == 0


def test_plugin_loads_kernels_in_a_new_worker_before_any_task():
    kernels.loss_sum(np.zeros(3), np.ones(3), np.ones(3), np.zeros(3), np.zeros(3))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, \
            Client(cluster, set_as_default=False) as client:
        client.register_plugin(WarmWorker())

        def loaded():
            # only looks: no dask-ssl task has run in this worker
            import time

            deadline = time.time() + 120
            while time.time() < deadline:
                # the plugin's thread may be importing it right now
                kernel = getattr(sys.modules.get("dask_ssl.linalg.kernels"), "loss_sum", None)
                if kernel is not None and kernel.signatures:
                    return True
                time.sleep(0.05)
            return False

        assert all(client.run(loaded).values())


def test_plugin_imports_the_worker_modules_before_it_returns():
    # Imports in a thread beside tasks could meet a half-imported module; the plugin's
    # registration returns only once they are done in every worker.
    from dask_ssl.cluster import WORKER_MODULES

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR) as cluster, \
            Client(cluster, set_as_default=False) as client:
        before = client.run(lambda: [m in sys.modules for m in WORKER_MODULES])
        assert not any(next(iter(before.values())))
        client.register_plugin(WarmWorker())
        after = client.run(lambda: [m in sys.modules for m in WORKER_MODULES])
        assert all(next(iter(after.values())))
