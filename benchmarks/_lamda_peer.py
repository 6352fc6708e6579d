"""LAMDA-SSL's LapSVM on a problem that bench_manifold.py saved: run in LAMDA-SSL's own venv.

    <lamda venv>/bin/python benchmarks/_lamda_peer.py PROBLEM.npz

PROBLEM.npz holds X, y (+1/-1), the labeled mask, the graph's weights (CSR parts) and the
hyperparameters. LAMDA-SSL's LapSVM (1.0.2) takes its graph through ``distance_function`` (a
callable returning the weight matrix) and forms ``L = D - W`` itself, so it gets the same kNN
graph as dask-ssl; its rows are the labeled ones first, then the unlabeled ones, so the matrix is
permuted to that order. Prints one JSON line: fit time, error on the unlabeled rows, peak
resident memory. Imports nothing from dask_ssl (not installed in that venv).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np
import scipy.sparse as sp


def main(path):
    from LAMDA_SSL.Algorithm.Classification.LapSVM import LapSVM

    data = np.load(path)
    X, y, lab = data["X"], data["y"], data["labeled"]
    W = sp.csr_matrix((data["w_data"], data["w_indices"], data["w_indptr"]),
                      shape=(X.shape[0],) * 2)
    order = np.concatenate([np.flatnonzero(lab), np.flatnonzero(~lab)])
    W_lamda = W[order][:, order].toarray()

    def graph(A, B):
        if A.shape[0] != W_lamda.shape[0]:
            raise ValueError("the graph is for the training rows only")
        return W_lamda

    model = LapSVM(distance_function=graph, gamma_d=None, kernel_function="rbf",
                   gamma_k=float(data["rbf_gamma"]), gamma_A=float(data["gamma_A"]),
                   gamma_I=float(data["gamma_I"]), evaluation=None)
    t0 = time.perf_counter()
    model.fit(X[lab], y[lab], X[~lab])
    fit_time = time.perf_counter() - t0
    error = float(np.mean(model.predict(X[~lab]) != y[~lab]))
    print(json.dumps({"time": fit_time, "error": error,
                      "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main(sys.argv[1])
