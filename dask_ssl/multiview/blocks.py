"""The views of the same rows on a cluster: one :class:`~dask_ssl.linalg.RowBlocks` per view, all
with the same row blocks on the same workers, and one label vector.

Block ``b`` of every view holds rows ``offsets[b]:offsets[b + 1]`` and lives in the memory of the
same worker, so a function of all the views of a block (the coupled products of
:mod:`dask_ssl.multiview.corls_primal`) runs there without moving a row: :meth:`joined` gives a
RowBlocks whose block ``b`` is the tuple of the views' blocks ``b``, for
:meth:`RowBlocks.call <dask_ssl.linalg.RowBlocks.call>`.

Built from in-memory views (:meth:`MultiViewBlocks.from_arrays`, and so from the ``.mat`` reader,
:meth:`MultiViewBlocks.from_mat`), from one svmlight file per view
(:meth:`MultiViewBlocks.from_svmlight`: each file is parsed on the workers in its own byte
ranges, then the later views' rows move once, worker to worker, into the first view's blocks),
or from RowBlocks made elsewhere (:meth:`MultiViewBlocks.from_blocks`, e.g. the multi-view
generators).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..linalg.realign import lined_up, take_rows
from ..linalg.rowblocks import RowBlocks
from ..models._input import FILE_UNLABELED


def _join(*views):
    return tuple(views)


@dataclass
class MultiViewBlocks:
    """Views of the same rows held as row blocks with identical offsets and owners.

    Parameters
    ----------
    views : list of RowBlocks
        One per view: the same block sizes, block ``b`` of each on the same worker (checked).
    names : tuple of str or None
        The views' names (predict then takes a dict by these names), or None.
    labels : list of Future or None
        One label vector, split like the blocks and held beside them (or None).
    unlabeled : scalar
        The marker of unlabeled rows in ``labels``: 0 for labels read from svmlight files
        (svmlin's convention), else as given.
    """

    views: list
    names: tuple | None = None
    labels: list | None = None
    unlabeled: object = -1
    _joined: RowBlocks | None = field(default=None, repr=False)

    def __post_init__(self):
        if len(self.views) < 1:
            raise ValueError("a MultiViewBlocks needs at least one view")
        if self.names is not None:
            self.names = tuple(self.names)
            if len(self.names) != len(self.views):
                raise ValueError(f"{len(self.names)} names for {len(self.views)} views")
        first = self.views[0]
        for k, view in enumerate(self.views[1:], 1):
            if not np.array_equal(view.sizes, first.sizes):
                raise ValueError(f"view {k} has blocks of {view.sizes.tolist()} rows, view 0 of "
                                 f"{first.sizes.tolist()}: use MultiViewBlocks.from_blocks, "
                                 "which lines them up")

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_blocks(cls, views, *, y=None, unlabeled=-1, names=None) -> "MultiViewBlocks":
        """Line up RowBlocks of the same rows: every later view whose blocks differ from the
        first's (sizes or workers) has its rows moved once, worker to worker, into the first
        view's blocks (:func:`~dask_ssl.linalg.realign.take_rows`). The labels are ``y`` (an
        in-memory vector, ``unlabeled`` its marker), else the first view's labels."""
        if isinstance(views, dict):
            names, views = tuple(views), list(views.values())
        views = list(views)
        if not views or not all(isinstance(v, RowBlocks) for v in views):
            raise TypeError("views must be a non-empty list of RowBlocks")
        first = views[0]
        for k, view in enumerate(views[1:], 1):
            if view.n_rows != first.n_rows:
                raise ValueError(f"views must hold the same rows: view 0 has {first.n_rows} "
                                 f"rows but view {k} has {view.n_rows}")
        owners = first.owners()
        aligned = [first]
        for view in views[1:]:
            if not lined_up(view, first):
                # the labels ride with the first view only: a moved view's would be split wrong
                view = take_rows(view, [np.arange(s.start, s.stop)
                                        for s in first.block_slices()], owners)
            aligned.append(view)
        out = cls(aligned, names, first.labels, unlabeled)
        if y is not None:
            first.persist_labels(y)
            out.labels = first.labels
        return out

    @classmethod
    def from_arrays(cls, Xs, *, client, y=None, unlabeled=-1, n_blocks=None,
                    sizes=None) -> "MultiViewBlocks":
        """Scatter in-memory views (a list, or a dict naming them; arrays or sparse matrices of
        the same rows) to the workers, block ``b`` of every view to the same worker. ``y``
        (optional, ``unlabeled`` its marker) is kept beside the blocks; ``n_blocks`` and
        ``sizes`` as in :meth:`RowBlocks.from_array <dask_ssl.linalg.RowBlocks.from_array>`."""
        from .views import check_views

        views = check_views(Xs, min_views=1)
        first = RowBlocks.from_array(views.arrays[0], client=client, n_blocks=n_blocks,
                                     sizes=sizes, y=y)
        rest = [RowBlocks.from_array(X, client=client, sizes=first.sizes)
                for X in views.arrays[1:]]
        return cls.from_blocks([first, *rest], unlabeled=unlabeled, names=views.names)

    @classmethod
    def from_mat(cls, path, *, client, n_blocks=None) -> "MultiViewBlocks":
        """A multi-view ``.mat`` file (:func:`dask_ssl.data.multiview.read_multiview`) read on
        the driver and scattered; every row labeled with its class id."""
        from ..data.multiview import read_multiview

        views, y = read_multiview(path)
        return cls.from_arrays(views, client=client, y=y, n_blocks=n_blocks)

    @classmethod
    def from_svmlight(cls, paths, *, client, n_features=None, n_blocks=None,
                      storage_options=None, cache=False) -> "MultiViewBlocks":
        """One svmlight file (or list of files, or glob) per view, the same rows in the same
        order in each: each parsed on the workers (:func:`dask_ssl.data.read_svmlight`), the
        later views lined up with the first. The labels are the first view's (0 unlabeled,
        as svmlin reads them); every view's labels must agree with them (else a ValueError
        naming the first row that differs). ``paths`` may be a dict naming the views;
        ``n_features`` one count for every view or a list with one per view."""
        from ..data.svmlight import read_svmlight

        names = tuple(paths) if isinstance(paths, dict) else None
        paths = list(paths.values()) if isinstance(paths, dict) else list(paths)
        widths = n_features if isinstance(n_features, (list, tuple)) else [n_features] * len(paths)
        if len(widths) != len(paths):
            raise ValueError(f"n_features has {len(widths)} values for {len(paths)} views")
        views = [read_svmlight(p, client=client, n_features=w, n_blocks=n_blocks,
                               storage_options=storage_options, cache=cache)
                 for p, w in zip(paths, widths)]
        y = views[0].gather_labels()
        for k, view in enumerate(views[1:], 1):
            if view.n_rows != views[0].n_rows:
                raise ValueError(f"views must hold the same rows: {paths[0]} has "
                                 f"{views[0].n_rows} rows but {paths[k]} has {view.n_rows}")
            other = view.gather_labels()
            if not np.array_equal(other, y):
                row = int(np.flatnonzero(other != y)[0])
                raise ValueError(f"the views' labels differ: row {row} is {y[row]:g} in "
                                 f"{paths[0]} but {other[row]:g} in {paths[k]}")
        return cls.from_blocks(views, unlabeled=FILE_UNLABELED, names=names)

    # properties ---------------------------------------------------------------------------
    @property
    def client(self):
        return self.views[0].client

    @property
    def n_views(self) -> int:
        return len(self.views)

    @property
    def n_rows(self) -> int:
        return self.views[0].n_rows

    @property
    def n_features(self) -> tuple:
        return tuple(int(v.n_features) for v in self.views)

    @property
    def sizes(self) -> np.ndarray:
        return self.views[0].sizes

    @property
    def offsets(self) -> np.ndarray:
        return self.views[0].offsets

    def owners(self) -> list:
        """The worker of each block, the same for every view (else a ValueError naming the
        block and the views)."""
        first = self.views[0].owners()
        for k, view in enumerate(self.views[1:], 1):
            other = view.owners()
            if other != first:
                b = next(b for b, (u, v) in enumerate(zip(first, other)) if u != v)
                raise ValueError(f"block {b} of view {k} is on {other[b]}, of view 0 on "
                                 f"{first[b]}: the views' blocks are not co-located")
        return first

    def gather_labels(self) -> np.ndarray:
        """The label vector in row order (``unlabeled`` its marker)."""
        if self.labels is None:
            raise ValueError("these views carry no labels: pass y")
        return np.concatenate(self.client.gather(self.labels))

    def joined(self) -> RowBlocks:
        """A RowBlocks whose block ``b`` is the tuple of the views' blocks ``b``, made on their
        worker (no row moves), for round trips over all the views at once. ``n_features`` is
        the views' total."""
        if self._joined is None:
            owners = self.owners()
            futures = [self.client.submit(_join, *[v.blocks[b] for v in self.views],
                                          workers=[owners[b]], allow_other_workers=False,
                                          pure=False)
                       for b in range(len(owners))]
            self.views[0].wait(futures)
            self._joined = RowBlocks(self.client, futures, self.sizes.copy(),
                                     sum(self.n_features), False, self.labels)
        return self._joined

    def forget_joined(self) -> None:
        """Make the joined blocks again on the next :meth:`joined`: theirs are pinned to the
        workers the views' blocks were on, and a lost worker's never come back."""
        if self._joined is not None:
            self.client.cancel(self._joined.blocks)
        self._joined = None

    def as_views(self):
        """The views as a multi-view estimator takes them: a list of RowBlocks, or a dict by
        name."""
        if self.names is None:
            return list(self.views)
        return dict(zip(self.names, self.views))


def as_multiview(Xs):
    """``Xs`` as :class:`MultiViewBlocks` if it is one, or a list (dict) of RowBlocks (lined
    up by :meth:`MultiViewBlocks.from_blocks`); None for views in memory."""
    if isinstance(Xs, MultiViewBlocks):
        return Xs
    values = list(Xs.values()) if isinstance(Xs, dict) else Xs
    if isinstance(values, (list, tuple)) and values and all(isinstance(v, RowBlocks)
                                                           for v in values):
        return MultiViewBlocks.from_blocks(Xs)
    if isinstance(values, (list, tuple)) and any(isinstance(v, RowBlocks) for v in values):
        raise TypeError("views must be all in memory or all RowBlocks, not a mix")
    return None
