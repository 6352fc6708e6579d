"""Exact duplicate rows: found by hashing each row, then given neighbour lists from those of the
distinct rows.

Only one row of each group of identical rows takes part in the search: duplicates cost it
nothing that way, and identical rows would otherwise fill NN-descent's lists with ties. The
driver groups rows by their two 64-bit hashes; :func:`expand_duplicates` then lists, for every
row, the other members of its group and the members of the groups nearest to it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .heaps import sort_pairs


@njit(cache=True, nogil=True)
def _mix(h, w):
    # splitmix64-style finalizer over the running state: cheap and well spread.
    h ^= w + np.uint64(0x9E3779B97F4A7C15) + (h << np.uint64(6)) + (h >> np.uint64(2))
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True)
def hash_dense_rows(U):
    """Two independent 64-bit hashes of each row of a uint32 view of float32 rows."""
    n, d = U.shape
    out = np.empty((n, 2), dtype=np.uint64)
    for i in range(n):
        h1 = np.uint64(0x243F6A8885A308D3)
        h2 = np.uint64(0x13198A2E03707344)
        for t in range(d):
            w = np.uint64(U[i, t])
            h1 = _mix(h1, w)
            h2 = _mix(h2, w ^ np.uint64(0xA5A5A5A5))
        out[i, 0], out[i, 1] = h1, h2
    return out


@njit(cache=True, nogil=True)
def hash_sparse_rows(indptr, indices, U):
    """Like :func:`hash_dense_rows` for CSR rows (column numbers and uint32 views of values)."""
    n = indptr.size - 1
    out = np.empty((n, 2), dtype=np.uint64)
    for i in range(n):
        h1 = np.uint64(0x243F6A8885A308D3)
        h2 = np.uint64(0x13198A2E03707344)
        for p in range(indptr[i], indptr[i + 1]):
            c, w = np.uint64(indices[p]), np.uint64(U[p])
            h1 = _mix(_mix(h1, c), w)
            h2 = _mix(_mix(h2, w), c ^ np.uint64(0x5A5A5A5A))
        out[i, 0], out[i, 1] = h1, h2
    return out


@njit(cache=True, nogil=True)
def expand_duplicates(rows, row_group, u_row, g_start, g_size, members, u_ind, u_dst, k):
    """Neighbour lists of rows ``rows`` from their groups of identical rows.

    ``row_group[a]`` is the group (a distinct row) of row ``rows[a]``, whose members are
    ``members[g_start[g]:g_start[g] + g_size[g]]`` in ascending row order;
    ``u_ind[u_row[a]]``, ``u_dst[u_row[a]]`` are the nearest groups found for it (a new point
    passes an empty group of its own). A row's candidates are the other members
    of its group (distance 0) and the members of the neighbouring groups, each at its group's
    distance; the ``k`` nearest by (distance, row number) are kept, as an exact search would.
    """
    m = rows.size
    ku = u_ind.shape[1]
    out_i = np.full((m, k), -1, np.int64)
    out_d = np.full((m, k), np.inf)
    cap = (k + 1) + ku * k
    ci = np.empty(cap, np.int64)
    cd = np.empty(cap)
    for a in range(m):
        r = rows[a]
        g = row_group[a]
        u = u_row[a]
        c = 0
        s = g_start[g]
        for t in range(s, s + min(g_size[g], k + 1)):
            if members[t] != r:
                ci[c], cd[c] = members[t], 0.0
                c += 1
        for v in range(ku):
            h = u_ind[u, v]
            if h < 0:
                continue
            # Groups come nearest first: once k candidates are nearer, the rest cannot enter.
            if c >= k:
                sort_pairs(ci, cd, c)
                c = k
                if u_dst[u, v] > cd[k - 1]:
                    break
            s = g_start[h]
            for t in range(s, s + min(g_size[h], k)):
                ci[c], cd[c] = members[t], u_dst[u, v]
                c += 1
        sort_pairs(ci, cd, c)
        for t in range(min(k, c)):
            out_i[a, t], out_d[a, t] = ci[t], cd[t]
    return out_i, out_d
