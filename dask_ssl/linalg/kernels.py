"""Numerical kernels that run inside one row block (numba where NumPy/SciPy express them badly).

Every block operator treats the bias as an implicit constant feature appended as the last column
(svmlin's convention), so blocks never copy their data to add a column.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
import scipy.sparse as sp

from .distinct import DistinctRows


def matvec(X, w: np.ndarray, bias: bool) -> np.ndarray:
    """Outputs ``[X, 1] w`` (or ``X w`` without bias)."""
    if isinstance(X, DistinctRows):
        return X.gather(matvec(X.U, w, bias))
    if bias:
        return np.asarray(X @ w[:-1]).ravel() + w[-1]
    return np.asarray(X @ w).ravel()


def rmatvec(X, v: np.ndarray, bias: bool) -> np.ndarray:
    """``[X, 1]^T v`` (or ``X^T v``)."""
    if isinstance(X, DistinctRows):
        return rmatvec(X.U, X.combine(v), bias)
    out = np.asarray(X.T @ v).ravel()
    if bias:
        return np.concatenate([out, [v.sum()]])
    return out


def rmatvec_pair(X, u: np.ndarray, v: np.ndarray, bias: bool) -> tuple[np.ndarray, np.ndarray]:
    """``([X, 1]^T u, [X, 1]^T v)``: for a CSR block in one pass over its rows, skipping rows
    where both are 0; the same sums in the same order as two :func:`rmatvec` calls, so the
    same numbers."""
    if not (sp.issparse(X) and X.format == "csr"):
        return rmatvec(X, u, bias), rmatvec(X, v, bias)
    d = X.shape[1]
    out_u, out_v = np.zeros(d), np.zeros(d)
    _csr_rmatvec_pair(unsigned_index(X.indptr), unsigned_index(X.indices), X.data,
                      np.ascontiguousarray(u, np.float64), np.ascontiguousarray(v, np.float64),
                      out_u, out_v)
    if bias:
        return np.concatenate([out_u, [u.sum()]]), np.concatenate([out_v, [v.sum()]])
    return out_u, out_v


@numba.njit(cache=True, nogil=True)
def _csr_rmatvec_pair(indptr, indices, data, u, v, out_u, out_v):
    # SciPy's X.T @ u scatters row by row in this order; one pass reads each row once for
    # both (the CG assembly's right-hand side and start product: two passes before).
    for i in range(indptr.size - 1):
        ui, vi = u[i], v[i]
        if ui == 0.0 and vi == 0.0:
            continue
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            out_u[j] += data[k] * ui
            out_v[j] += data[k] * vi


def weighted_normal_product(X, a: np.ndarray, p: np.ndarray, bias: bool) -> np.ndarray:
    """``[X,1]^T diag(a) [X,1] p``: one CG product on the normal equations."""
    if isinstance(X, DistinctRows):
        # Identical rows have identical outputs: their weights add up.
        return weighted_normal_product(X.U, X.combine(a), p, bias)
    if sp.issparse(X) and X.format == "csr":
        out = np.zeros(p.size)
        _csr_normal_product(unsigned_index(X.indptr), unsigned_index(X.indices), X.data,
                            np.ascontiguousarray(a, np.float64),
                            np.ascontiguousarray(p, np.float64), bias, out)
        return out
    return rmatvec(X, a * matvec(X, p, bias), bias)


def unsigned_index(index: np.ndarray) -> np.ndarray:
    """An unsigned view of a CSR index array: numba drops its negative-index check on every
    access through it (20-30% of a sparse product's time)."""
    return index.view(np.uint32 if index.dtype.itemsize == 4 else np.uint64)


@numba.njit(cache=True, nogil=True, fastmath=True)
def _csr_normal_product(indptr, indices, data, a, p, bias, out):
    # One pass over the rows instead of SciPy's two (X p, then X^T q): a row is read from
    # memory once and reused from cache for its scatter, which halves the traffic of a
    # memory-bound product, and rows of weight 0 (outside the active set) are skipped.
    d = out.size - 1 if bias else out.size
    p_bias = p[d] if bias else 0.0
    out_bias = 0.0
    for i in range(indptr.size - 1):
        ai = a[i]
        if ai == 0.0:
            continue
        s = p_bias
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * p[indices[k]]
        c = ai * s
        for k in range(indptr[i], indptr[i + 1]):
            out[indices[k]] += c * data[k]
        out_bias += c
    if bias:
        out[d] = out_bias


@numba.njit(cache=True, nogil=True)
def _csr_gram_rows(indptr, indices, data, rows, weights, G, bias_col):
    """Upper triangle only (indices sorted within each row, so column >= row is q >= p);
    :func:`gram_rows` mirrors it. ``G`` is addressed flat: the 2-D index arithmetic was a
    third of the time of this loop."""
    size = G.shape[0]
    flat = G.ravel()
    for r in range(rows.shape[0]):
        i = rows[r]
        w = weights[r]
        start, stop = indptr[i], indptr[i + 1]
        for p in range(start, stop):
            vj = data[p] * w
            base = indices[p] * size
            for q in range(p, stop):
                flat[base + indices[q]] += vj * data[q]
            if bias_col >= 0:
                flat[base + bias_col] += vj
        if bias_col >= 0:
            flat[bias_col * size + bias_col] += w


def gram_rows(X, rows: np.ndarray, weights: np.ndarray, bias: bool, *,
              packed: bool = False) -> np.ndarray:
    """``sum_{r in rows} weights_r x_r x_r^T`` over the (bias-augmented) rows, dense; with
    ``packed``, its upper triangle row by row (``G[np.triu_indices(size)]``: half the bytes
    to send, see :func:`unpack_symmetric`)."""
    if isinstance(X, DistinctRows):
        combined = X.combine(weights, rows)
        distinct = np.flatnonzero(combined)
        return gram_rows(X.U, distinct, combined[distinct], bias, packed=packed)
    d = X.shape[1]
    size = d + 1 if bias else d
    G = np.zeros((size, size))
    if rows.size and sp.issparse(X):
        if not X.has_sorted_indices:
            X = X.sorted_indices()
        _csr_gram_rows(X.indptr, X.indices, X.data, rows.astype(np.int64),
                       weights.astype(np.float64), G, d if bias else -1)
        if packed:
            return G[_upper(size)]
        return G + np.triu(G, 1).T
    if rows.size:
        Xs = X[rows]
        G[:d, :d] = Xs.T @ (weights[:, None] * Xs)
        if bias:
            col = Xs.T @ weights
            G[:d, d] = col
            G[d, :d] = col
            G[d, d] = weights.sum()
    return G[_upper(size)] if packed else G


@functools.lru_cache(maxsize=8)
def _upper(size: int) -> tuple:
    return np.triu_indices(size)


def unpack_symmetric(packed: np.ndarray, size: int) -> np.ndarray:
    """The symmetric matrix whose upper triangle :func:`gram_rows` packed."""
    G = np.zeros((size, size))
    G[_upper(size)] = packed
    return G + np.triu(G, 1).T


def rmatvec_rows(X, rows: np.ndarray, v: np.ndarray, bias: bool) -> np.ndarray:
    """``sum_{r in rows} v_r [x_r, 1]``: :func:`rmatvec` over a few rows, in time
    proportional to them."""
    return rmatvec(X[rows], v, bias)


@numba.njit(cache=True, nogil=True)
def active_weights(o, cpos, cneg, csq, tsq):
    """Per-row Hessian weight ``a`` and right-hand side ``b`` of the Newton system at outputs o.

    Row loss: ``cpos/2 max(0, 1-o)^2 + cneg/2 max(0, 1+o)^2 + csq/2 (o - tsq)^2``; a hinge term is
    active when strictly inside its margin.
    """
    n = o.shape[0]
    a = np.zeros(n)
    b = np.zeros(n)
    for i in range(n):
        ai = csq[i]
        bi = csq[i] * tsq[i]
        if o[i] < 1.0:
            ai += cpos[i]
            bi += cpos[i]
        if o[i] > -1.0:
            ai += cneg[i]
            bi -= cneg[i]
        a[i] = ai
        b[i] = bi
    return a, b


@numba.njit(cache=True, nogil=True)
def loss_sum(o, cpos, cneg, csq, tsq):
    """``sum_i`` of the row losses of :func:`active_weights` (without the 1/2)."""
    s = 0.0
    for i in range(o.shape[0]):
        if o[i] < 1.0:
            s += cpos[i] * (1.0 - o[i]) ** 2
        if o[i] > -1.0:
            s += cneg[i] * (1.0 + o[i]) ** 2
        s += csq[i] * (o[i] - tsq[i]) ** 2
    return 0.5 * s


@numba.njit(cache=True, nogil=True)
def _add_on_range(acc, ka, kb, lin, quad, const):
    acc[0, ka] += lin
    acc[1, ka] += quad
    acc[2, ka] += const
    acc[0, kb] -= lin
    acc[1, kb] -= quad
    acc[2, kb] -= const


@numba.njit(cache=True, nogil=True)
def _first_at_or_above(deltas, x):
    lo, hi = 0, deltas.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if deltas[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def line_derivatives(o, dd, cpos, cneg, csq, tsq, deltas):
    """Loss part of phi'(delta), its slope phi'' (right limit) and phi at each candidate delta
    (increasing, ``deltas[0] = 0``).

    Also counts, per interval (deltas[k-1], deltas[k]], the breakpoints inside it so the driver
    knows how much a second, exact pass over one interval will ship.

    A hinge term is active on one side of its breakpoint, so on a contiguous run of candidates:
    each term is added to a difference array over its run (found by bisection) and prefix sums
    give every candidate's totals, O(n log K) instead of O(n K).
    """
    K = deltas.shape[0]
    # rows: sum of c (o - t) d, of c d^2, of c/2 (o - t)^2 over the terms active at delta_k
    acc = np.zeros((3, K + 1))
    counts = np.zeros(K, dtype=np.int64)
    for i in range(o.shape[0]):
        oi = o[i]
        di = dd[i]
        for term in range(2):
            c = cpos[i] if term == 0 else cneg[i]
            if c <= 0.0:
                continue
            r = oi - 1.0 if term == 0 else oi + 1.0
            lin, quad, const = c * r * di, c * di * di, 0.5 * c * r * r
            if di == 0.0:
                if (term == 0 and oi < 1.0) or (term == 1 and oi > -1.0):
                    _add_on_range(acc, 0, K, lin, quad, const)
                continue
            kc = _first_at_or_above(deltas, -r / di)
            if 1 <= kc < K:
                counts[kc] += 1
            # the + term is active below its margin: rising outputs leave it at the breakpoint,
            # falling ones enter it there (at the breakpoint itself the right limit counts)
            if (term == 0) == (di > 0.0):
                _add_on_range(acc, 0, kc, lin, quad, const)
            else:
                _add_on_range(acc, kc, K, lin, quad, const)
        if csq[i] > 0.0:
            r = oi - tsq[i]
            _add_on_range(acc, 0, K, csq[i] * r * di, csq[i] * di * di, 0.5 * csq[i] * r * r)
    lin = np.cumsum(acc[0])[:K]
    slope = np.cumsum(acc[1])[:K]
    const = np.cumsum(acc[2])[:K]
    der = lin + deltas * slope
    val = const + deltas * lin + 0.5 * deltas * deltas * slope
    return der, slope, val, counts


@numba.njit(cache=True, nogil=True)
def breakpoints_between(o, dd, cpos, cneg, lo, hi):
    """Breakpoints in (lo, hi] with the change of phi'' when delta crosses each (increasing)."""
    pos = []
    change = []
    for i in range(o.shape[0]):
        di = dd[i]
        if di == 0.0:
            continue
        if cpos[i] > 0.0:
            bp = (1.0 - o[i]) / di
            if lo < bp <= hi:
                pos.append(bp)
                # + term is active below the margin: it leaves when outputs rise through 1
                change.append(-cpos[i] * di * di if di > 0.0 else cpos[i] * di * di)
        if cneg[i] > 0.0:
            bp = (-1.0 - o[i]) / di
            if lo < bp <= hi:
                pos.append(bp)
                change.append(cneg[i] * di * di if di > 0.0 else -cneg[i] * di * di)
    return np.array(pos, dtype=np.float64), np.array(change, dtype=np.float64)


@numba.njit(cache=True, nogil=True)
def margin_violations(o, o_new, cpos, cneg, tau):
    """svmlin's optimality check (thesis 6.2.3): count hinge terms whose side of the margin at the
    Newton point ``o_new`` disagrees, beyond tau, with the active set chosen at ``o``."""
    bad = 0
    for i in range(o.shape[0]):
        if cpos[i] > 0.0:
            if o[i] < 1.0:
                if not (o_new[i] < 1.0 + tau):
                    bad += 1
            elif not (o_new[i] >= 1.0 - tau):
                bad += 1
        if cneg[i] > 0.0:
            if o[i] > -1.0:
                if not (-o_new[i] < 1.0 + tau):
                    bad += 1
            elif not (-o_new[i] >= 1.0 - tau):
                bad += 1
    return bad
