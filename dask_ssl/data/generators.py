"""Seeded synthetic data sets, generated block by block on the Dask workers.

Rows are generated in fixed chunks of ``CHUNK`` rows, chunk ``c`` always whole from a random
generator seeded with ``(seed, c)``; a block makes the chunks it overlaps and keeps its rows.
The data therefore depend on the seed only, not on the number of blocks or on which worker runs
what, and ``n`` rows are the first ``n`` rows of any larger data set with the same seed.

Every generator takes ``client``: with one it returns a
:class:`~dask_ssl.linalg.RowBlocks` with labels in {-1, +1}; with ``client=None`` it builds the
same rows in this process and returns ``(X, y)`` (NumPy / SciPy CSR), for small tests.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.special import ndtri

from ..linalg.rowblocks import RowBlocks, _split_sizes, default_block_count

#: Rows per generation chunk; part of the definition of every data set (changing it changes
#: the data), so it is fixed.
CHUNK = 4096
_ROWS_PER_BLOCK = 131072  # default block size of large data sets
_LENGTH_PER_WORD = 1.16  # tokens per distinct word in rcv1_like documents (measured)


def _rng(seed, *key):
    return np.random.default_rng([int(seed), *key])


def _rows(make, start, stop, seed, params):
    """Rows ``[start, stop)`` of a data set whose chunk ``c`` is ``make(rng, n, **params)``."""
    parts = []
    for c in range(start // CHUNK, (stop - 1) // CHUNK + 1):
        lo, hi = max(start, c * CHUNK), min(stop, (c + 1) * CHUNK)
        X, y = make(_rng(seed, 1, c), CHUNK, **params)
        parts.append((X[lo - c * CHUNK:hi - c * CHUNK], y[lo - c * CHUNK:hi - c * CHUNK]))
    Xs = [p[0] for p in parts]
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs)
    return X, np.concatenate([p[1] for p in parts])


def _x(part):
    return part[0]


def _y(part):
    return part[1]


def _check(n, name="n"):
    if int(n) != n or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")


def _generate(make, n, seed, client, n_blocks, n_features, sparse, params):
    """Make ``n`` rows locally (``client=None``) or as blocks on the workers."""
    _check(n)
    if client is None:
        return _rows(make, 0, n, seed, params)
    if n_blocks is None:
        n_blocks = default_block_count(client, n / _ROWS_PER_BLOCK)
    _check(n_blocks, "n_blocks")
    sizes = _split_sizes(n, n_blocks)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    workers = list(client.nthreads())
    # Round-robin preference: equal shares of blocks per worker, as the solvers' speed
    # needs; loose, so a block lost with its worker is rebuilt on another.
    parts = [client.submit(_rows, make, int(offsets[i]), int(offsets[i + 1]), seed, params,
                           workers=[workers[i % len(workers)]], allow_other_workers=True,
                           pure=False)
             for i in range(len(sizes))]
    blocks = [client.submit(_x, p) for p in parts]
    labels = [client.submit(_y, p) for p in parts]
    return RowBlocks(client, blocks, sizes, n_features, sparse, labels)


# two moons ------------------------------------------------------------------------------------
def _moons(rng, n, *, noise):
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)  # alternating: exactly balanced classes
    t = rng.uniform(0.0, np.pi, n)
    X = np.where(y[:, None] > 0, np.c_[np.cos(t), np.sin(t)],
                 np.c_[1.0 - np.cos(t), 0.5 - np.sin(t)])
    return X + rng.normal(0.0, noise, (n, 2)), y


def two_moons(*, n=200, noise=0.1, seed=0, client=None, n_blocks=None):
    """Two interleaved half circles in 2-D (dense), classes alternating row by row.

    Parameters
    ----------
    n : int, default 200
    noise : float, default 0.1
        Standard deviation of the Gaussian noise added to each coordinate.
    seed : int, default 0
    client : distributed.Client or None
        ``None``: return ``(X, y)`` in memory; otherwise blocks on the workers.
    n_blocks : int, optional
        Default: one per worker thread (more for large ``n``).

    Returns
    -------
    RowBlocks or (ndarray of shape (n, 2), ndarray of shape (n,))
        Labels +1 (upper moon) / -1 (lower moon).
    """
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    return _generate(_moons, n, seed, client, n_blocks, 2, False, {"noise": float(noise)})


# g50c -----------------------------------------------------------------------------------------
def _gaussians(rng, n, *, n_features, distance):
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    X = rng.normal(size=(n, n_features))
    X += (y * distance / math.sqrt(n_features))[:, None]
    return X, y


def g50c(*, n=550, n_features=50, bayes_error=0.05, seed=0, client=None, n_blocks=None):
    """Two unit-covariance Gaussians with equal priors (Chapelle and Zien's g50c).

    The means are ``+-mu * e / ||e||`` with ``e`` the all-ones vector and
    ``Phi(-mu) = bayes_error`` (``mu = 1.6449`` for 5%), so the best rule, ``sign(e @ x)``,
    errs on ``bayes_error`` of the rows.

    Parameters
    ----------
    n : int, default 550
    n_features : int, default 50
    bayes_error : float in (0, 0.5), default 0.05
    seed, client, n_blocks
        As in :func:`two_moons`.

    Returns
    -------
    RowBlocks or (ndarray of shape (n, n_features), ndarray of shape (n,))
    """
    _check(n_features, "n_features")
    if not 0 < bayes_error < 0.5:
        raise ValueError(f"bayes_error must lie in (0, 0.5), got {bayes_error!r}")
    params = {"n_features": int(n_features), "distance": float(-ndtri(bayes_error))}
    return _generate(_gaussians, n, seed, client, n_blocks, int(n_features), False, params)


# rcv1_like ------------------------------------------------------------------------------------
class _TopicModel:
    """The vocabulary and topics every chunk samples from (drawn once from the seed).

    Background: a Zipf distribution over the vocabulary (word ``r`` has weight
    ``1 / (r + 1)``). Topic ``t``: ``topic_size`` words drawn from the mid-frequency ranks
    (50 to ``n_features / 2``), so topics share words only by chance (about
    ``topic_size**2 / pool`` words per pair), with Zipf-like weights of their own. Topics
    ``0 .. k-1`` make class +1, the rest class -1.
    """

    def __init__(self, rng, *, n_features, topics_per_class, topic_size):
        self.n_features = n_features
        self.topics_per_class = topics_per_class
        ranks = np.arange(1, n_features + 1)
        self.background = np.cumsum(1.0 / ranks)
        self.background /= self.background[-1]
        pool = np.arange(min(50, n_features // 10), max(n_features // 2, topic_size + 1))
        n_topics = 2 * topics_per_class
        self.words = np.stack([rng.choice(pool, topic_size, replace=False)
                               for _ in range(n_topics)]).astype(np.int64)
        weights = 1.0 / (np.arange(topic_size) + 5.0) ** 0.7
        self.cumulative = np.tile(np.cumsum(weights) / weights.sum(), (n_topics, 1))


@njit(cache=True, nogil=True)
def _draw(cumulative, u):
    """Inverse CDF: the first index whose cumulative weight reaches ``u``. (Hand-written:
    numba's ``np.searchsorted`` and ``np.sort`` cost seconds of compiling per process.)"""
    lo, hi = 0, cumulative.shape[0] - 1  # the last index also catches round-off above the end
    while lo < hi:
        mid = (lo + hi) >> 1
        if cumulative[mid] < u:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _count_words(lengths, n_main, n_second, main, second, u, background, words, cumulative):
    """Draw every document's words and count them into CSR (indices unsorted within a row).

    Document ``d`` has ``lengths[d]`` tokens: ``n_main[d]`` from topic ``main[d]``,
    ``n_second[d]`` from topic ``second[d]``, the rest from the background; ``u`` holds one
    uniform number per token.
    """
    n = lengths.shape[0]
    total = lengths.sum()
    indptr = np.zeros(n + 1, np.int64)
    indices = np.empty(total, np.int32)
    data = np.empty(total)
    seen = np.empty(background.shape[0], np.int64)  # word -> its entry in the current row
    seen[:] = -1
    k = pos = 0
    for d in range(n):
        for j in range(lengths[d]):
            if j < n_main[d]:
                w = words[main[d], _draw(cumulative[main[d]], u[k])]
            elif j < n_main[d] + n_second[d]:
                w = words[second[d], _draw(cumulative[second[d]], u[k])]
            else:
                w = _draw(background, u[k])
            k += 1
            if seen[w] < indptr[d]:
                seen[w] = pos
                indices[pos] = w
                data[pos] = 1.0
                pos += 1
            else:
                data[seen[w]] += 1.0
        indptr[d + 1] = pos
    return data[:pos].copy(), indices[:pos].copy(), indptr


def _documents(rng, n, *, model, mean_length, topic_share, pos_fraction):
    """Term counts of ``n`` documents and their classes.

    A document picks its class (+1 with ``pos_fraction``), a main topic of that class and a
    second topic of any class. A share ``~ Beta`` (mean ``topic_share``) of its tokens comes
    from topics, of which 75-100% from the main one; the rest is background.
    """
    k = model.topics_per_class
    y = np.where(rng.random(n) < pos_fraction, 1.0, -1.0)
    main = rng.integers(0, k, n) + np.where(y > 0, 0, k)
    second = rng.integers(0, 2 * k, n)
    lengths = 1 + rng.poisson(mean_length - 1, n)
    share = rng.beta(8.0 * topic_share, 8.0 * (1.0 - topic_share), n)
    n_topic = rng.binomial(lengths, share)
    n_main = rng.binomial(n_topic, rng.uniform(0.75, 1.0, n))
    u = rng.random(lengths.sum())
    data, indices, indptr = _count_words(lengths, n_main, n_topic - n_main, main, second, u,
                                         model.background, model.words, model.cumulative)
    X = sp.csr_matrix((data, indices, indptr), shape=(n, model.n_features))
    X.sort_indices()
    return X, y


def _document_frequency(X):
    return np.bincount(X.indices, minlength=X.shape[1])


def _idf(frequencies, n_rows):
    """``log(n_rows / df)`` from the blocks' document frequencies (a word in no document: 1)."""
    return np.log(n_rows / np.maximum(np.sum(frequencies, axis=0), 1))


def _tf_idf(X, idf):
    """``(1 + log tf) * idf``, rows scaled to unit l2 norm (the ltc weighting of RCV1)."""
    X = X.copy()
    X.data = (1.0 + np.log(X.data)) * idf[X.indices]
    # A word in every document has idf 0: drop it rather than store zeros.
    X.eliminate_zeros()
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0  # a document of such words only stays an empty row
    X.data /= np.repeat(norms, np.diff(X.indptr))
    return X


def rcv1_like(*, n_rows=804414, n_features=47236, nnz_per_row=76, pos_fraction=0.47,
              topics_per_class=6, topic_size=800, topic_share=0.3, seed=0, client=None,
              n_blocks=None):
    """Sparse text-like data shaped like RCV1 (CCAT vs rest), with a cluster structure.

    Documents are bags of words from a Zipf background plus topic multinomials; each class is
    a union of ``topics_per_class`` topics whose vocabularies overlap little, so unlabeled
    documents reveal the clusters while a few labeled ones cover each topic's vocabulary
    only thinly. Features are ``(1 + log tf) * log(n_rows / df)``, rows l2-normalized; the
    document frequencies are summed over all blocks on the driver, then applied on the workers.

    Parameters
    ----------
    n_rows : int, default 804414
    n_features : int, default 47236
    nnz_per_row : float, default 76
        Mean number of distinct words a document holds (approximately).
    pos_fraction : float, default 0.47
        Probability of class +1.
    topics_per_class : int, default 6
    topic_size : int, default 800
        Words per topic.
    topic_share : float in (0, 1), default 0.3
        Mean share of a document's tokens drawn from its topics.
    seed, client, n_blocks
        As in :func:`two_moons`.

    Returns
    -------
    RowBlocks or (scipy.sparse.csr_matrix, ndarray)
        Sparse rows with labels +1 / -1.

    Notes
    -----
    With the defaults (first 60 000 rows: 50 000 to train, 10 000 to test), a linear SVM errs
    on about 22% of the test rows with 100 stratified labels, 4% with 1000 and 2% with all; on
    20 000 rows this library's TSVM reaches about 2.3% from the same 100 labels (a supervised
    L2-SVM: 15%).
    """
    _check(n_rows, "n_rows")
    _check(n_features, "n_features")
    _check(topics_per_class, "topics_per_class")
    _check(topic_size, "topic_size")
    if not 1 <= nnz_per_row <= n_features:
        raise ValueError(f"nnz_per_row must lie in [1, n_features], got {nnz_per_row!r}")
    if not 2 * topic_size <= n_features:
        raise ValueError(f"topic_size={topic_size} needs n_features >= {2 * topic_size}")
    for name, value in (("pos_fraction", pos_fraction), ("topic_share", topic_share)):
        if not 0 < value < 1:
            raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    model = _TopicModel(_rng(seed, 0), n_features=int(n_features),
                        topics_per_class=int(topics_per_class), topic_size=int(topic_size))
    params = {"model": model, "mean_length": _LENGTH_PER_WORD * nnz_per_row,
              "topic_share": float(topic_share), "pos_fraction": float(pos_fraction)}
    counts = _generate(_documents, n_rows, seed, client, n_blocks, int(n_features), True, params)
    if client is None:
        X, y = counts
        return _tf_idf(X, _idf([_document_frequency(X)], n_rows)), y
    # idf is a task, not scattered data: a block lost with its worker is recomputed from
    # its lineage, which a scattered idf (forgotten once the blocks were made) would cut.
    idf = client.submit(_idf, [client.submit(_document_frequency, b) for b in counts.blocks],
                        n_rows)
    counts.blocks = [client.submit(_tf_idf, b, idf) for b in counts.blocks]
    return counts
