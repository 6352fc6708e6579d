"""Seeded multi-view toy data: Rosenberg's LINES (4.4) and the thesis' two-moons-two-lines (4.5).

Both follow :mod:`dask_ssl.data.generators`: rows come in fixed chunks, each from a generator
seeded with ``(seed, chunk)``, so the data depend on the seed only and ``n`` rows are the first
``n`` of any larger set. They return ``(Xs, y)``: a list of dense views (the same rows in each)
and labels in {-1, +1}. With a ``client`` each view is a
:class:`~dask_ssl.linalg.RowBlocks` made on the workers (the labels ride with every view).

The seeds describe both data sets in words only; the geometry below is the project's reading,
fixed here so that results can be compared.
"""

from __future__ import annotations

import numpy as np

from .generators import _generate, _moons


def _views(make, n_views, widths, n, seed, client, n_blocks, params):
    """``(Xs, y)`` in memory, or one RowBlocks per view; ``make(rng, n, **params)`` returns
    ``([view, ...], y)`` for a chunk."""

    def one(view):
        def chunk(rng, size, **kw):
            Xs, y = make(rng, size, **kw)
            return Xs[view], y
        return chunk

    if client is None:
        parts = [_generate(one(v), n, seed, None, n_blocks, widths[v], False, params)
                 for v in range(n_views)]
        return [X for X, _ in parts], parts[0][1]
    return [_generate(one(v), n, seed, client, n_blocks, widths[v], False, params)
            for v in range(n_views)]


# LINES ----------------------------------------------------------------------------------------
def _lines(rng, n, *, noise, length):
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    s = rng.uniform(0.0, length, n)
    # class +1 along (1, 1)/sqrt 2, class -1 along (1, -1)/sqrt 2, both leaving the origin
    direction = np.where(y[:, None] > 0, [1.0, 1.0], [1.0, -1.0]) / np.sqrt(2.0)
    X = s[:, None] * direction + rng.normal(0.0, noise, (n, 2))
    return [X], y


def lines(*, n=1002, noise=0.01, length=1.0, seed=0, client=None, n_blocks=None):
    """LINES (Rosenberg 4.4, Tables 4.1-4.4): two perpendicular noisy lines in 2-D, one class
    each, classes alternating row by row.

    Rosenberg: "a variant of the two-dimensional problem shown in Figure 4.1, where we added
    random noise around the two perpendicular lines", classified with the linear kernel
    ``<x, z>`` (no bias), 2 labeled, 500 unlabeled, 250 test and 250 validation rows
    (n = 1002). A classifier through the origin can separate two lines only if they do not
    cross it, so the lines here are two perpendicular segments leaving the origin: class +1
    at ``s (1, 1)/sqrt 2``, class -1 at ``s (1, -1)/sqrt 2``, ``s ~ U(0, length)``, plus
    isotropic Gaussian noise. The best linear rule is ``sign(x_2)``; near the origin the noise
    mixes the classes (its error is about ``0.56 noise / length``: 0.6% by default).

    Parameters
    ----------
    n : int, default 1002
    noise : float, default 0.01
        Standard deviation of the noise on each coordinate.
    length : float, default 1.0
        Length of each segment.
    seed : int, default 0
    client : distributed.Client or None
    n_blocks : int, optional

    Returns
    -------
    (list of one ndarray of shape (n, 2), ndarray of shape (n,)), or a list of one RowBlocks
    """
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    if not length > 0:
        raise ValueError(f"length must be > 0, got {length!r}")
    return _views(_lines, 1, (2,), n, seed, client, n_blocks,
                  {"noise": float(noise), "length": float(length)})


# two moons, two lines -------------------------------------------------------------------------
def _moons_lines(rng, n, *, moons_noise, lines_noise, spread):
    moons, y = _moons(rng, n, noise=moons_noise)
    # view 2: two parallel lines along (1, 1)/sqrt 2, one each side of the origin, drawn
    # independently of the moon position given the class
    s = rng.uniform(-spread, spread, n)
    along = np.array([1.0, 1.0]) / np.sqrt(2.0)
    across = np.array([-1.0, 1.0]) / np.sqrt(2.0)
    lines_view = (s[:, None] * along + (0.5 * y)[:, None] * across
                  + rng.normal(0.0, lines_noise, (n, 2)))
    return [moons, lines_view], y


def two_moons_two_lines(*, n=200, moons_noise=0.1, lines_noise=0.05, spread=1.5, seed=0,
                        client=None, n_blocks=None):
    """Two-moons-two-lines (thesis 4.5, Figures 4.2-4.3): two views of two classes, classes
    alternating row by row.

    View 0 is :func:`~dask_ssl.data.two_moons` (the upper moon class +1); view 1 holds two
    parallel lines oriented along ``(1, 1)``, class +1 at distance 0.5 above the origin and
    class -1 below it, position along the line ``U(-spread, spread)``. Given the class, a row's
    point on its line is drawn independently of its point on its moon (the thesis: "randomly
    associating points on one moon with points on one line", class-conditional view
    independence). The thesis uses an RBF kernel on the moons and the linear kernel on the
    lines; a larger ``moons_noise`` merges the moons (its Figure 4.3, bottom).

    Parameters
    ----------
    n : int, default 200
    moons_noise, lines_noise : float
        Standard deviation of the Gaussian noise in each view.
    spread : float, default 1.5
        Half-length of each line.
    seed, client, n_blocks
        As :func:`lines`.

    Returns
    -------
    ([ndarray (n, 2), ndarray (n, 2)], ndarray (n,)), or a list of two RowBlocks
    """
    for name, value in (("moons_noise", moons_noise), ("lines_noise", lines_noise)):
        if not value >= 0:
            raise ValueError(f"{name} must be >= 0, got {value!r}")
    if not spread > 0:
        raise ValueError(f"spread must be > 0, got {spread!r}")
    return _views(_moons_lines, 2, (2, 2), n, seed, client, n_blocks,
                  {"moons_noise": float(moons_noise), "lines_noise": float(lines_noise),
                   "spread": float(spread)})
