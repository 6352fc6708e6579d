"""A matrix split into row blocks that live on the Dask workers.

Data moves once: blocks are read or scattered to the workers and stay there. Every solver step is
one *round trip*: a function runs on each block on the worker holding it and returns something
small (a d-vector, a d x d Gram contribution, a few scalars) to the driver. Solvers use direct
calls (:meth:`RowBlocks.call`); steps whose arguments are futures go as pinned tasks
(:meth:`RowBlocks.map`).
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from distributed import Client, Future, wait

from .direct import BlockRunner, run_blocks
from .trips import count_round_trip
from .workerstate import StateLost
from .workers import live_workers, unblock_lineage

#: Seconds a round trip may run before the driver checks that the blocks' workers are alive.
POLL_SECONDS = 2.0
#: The message of the RuntimeError the scheduler gives an actor whose worker was lost.
ACTOR_LOST = "Worker holding Actor was lost"


def is_dask_array(X) -> bool:
    """Whether ``X`` is a Dask array, without importing ``dask.array``: a process that has not
    imported it holds none, and the import costs 0.3-0.8 s, a whole L2SVM fit on KDD99 10%."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def payload_bytes(obj) -> int:
    """Bytes of the arrays in a round trip's arguments or results (arrays, sparse matrices,
    and tuples, lists or dicts of them; numbers 8 bytes; functions and the rest 0): what
    crosses the network to or from a worker process, counted the same for worker threads."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if sp.issparse(obj):
        return sum(a.nbytes for a in (obj.data, getattr(obj, "indices", obj.data[:0]),
                                      getattr(obj, "indptr", obj.data[:0])))
    if isinstance(obj, (tuple, list)):
        return sum(payload_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(payload_bytes(o) for o in obj.values())
    if isinstance(obj, (int, float, np.number)):
        return 8
    return 0


def default_block_count(client: Client, n_units: float = 1) -> int:
    """At least ``n_units`` blocks, rounded up to a multiple of the cluster's worker threads:
    blocks of equal size then load every worker equally (7 blocks on 2 workers leave one with
    4/7 of the work, capping the speed-up at 1.75)."""
    threads = max(1, sum(client.nthreads().values()))
    return threads * max(1, -(-int(np.ceil(n_units)) // threads))


def keep_replicas(client: Client) -> None:
    """Stop the scheduler's Active Memory Manager, once per client.

    A task on another worker (the kNN search, a graph build) copies a block there; the AMM's
    ReduceReplicas policy later drops one of the copies, and it may be the one on the worker
    that :meth:`RowBlocks.owners` chose and that holds the block's worker-side state: the next
    direct call then finds the block gone (``StateLost``) with every worker alive. Replicas
    cost memory only until the next fit releases its blocks; losing one costs a rebuild.
    """
    if getattr(client, "_dask_ssl_keeps_replicas", False):
        return
    try:
        if client.amm.running():
            client.amm.stop()
    except Exception:  # a scheduler without the AMM has no replicas to reduce
        pass
    client._dask_ssl_keeps_replicas = True


def _split_sizes(n: int, n_blocks: int) -> np.ndarray:
    n_blocks = max(1, min(n_blocks, n)) if n > 0 else 1
    base, extra = divmod(n, n_blocks)
    return np.array([base + (1 if i < extra else 0) for i in range(n_blocks)], dtype=np.int64)


def _as_block(X):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        X.sum_duplicates()
        X.sort_indices()
        return X
    return np.ascontiguousarray(X, dtype=np.float64)


@dataclass
class RowBlocks:
    """Row blocks of an ``n_rows x n_features`` matrix held on Dask workers.

    Parameters
    ----------
    client : distributed.Client
    blocks : list of Future
        One future per block: a ``scipy.sparse.csr_matrix`` or a C-contiguous float64 ndarray.
    sizes : array of int
        Rows per block, in order. Row ``offsets[i] + k`` of the matrix is row ``k`` of block ``i``.
    n_features : int
    sparse : bool
    labels : list of Future or None
        Per-block label vectors, when the data came with labels (readers, generators).
    """

    client: Client
    blocks: list
    sizes: np.ndarray
    n_features: int
    sparse: bool
    labels: list | None = None
    name: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def __post_init__(self):
        self.sizes = np.asarray(self.sizes, dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)])
        self._owners = None
        self._runner_futures = self._runner_keys = None
        self.round_trips = 0
        #: Bytes of arguments sent and results received by :meth:`call` and :meth:`map`
        #: (:func:`payload_bytes`), for per-stage reports beside ``round_trips``.
        self.bytes_moved = 0

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_array(cls, X, *, client: Client, n_blocks: int | None = None, y=None,
                   sizes=None) -> "RowBlocks":
        """Split an in-memory NumPy/SciPy matrix (or a Dask array) into blocks on the workers.

        ``n_blocks`` defaults to one block per worker thread; ``sizes`` (rows per block, in
        order) sets the blocks instead.
        """
        if is_dask_array(X):
            return cls.from_dask_array(X, client=client, y=y)
        n = X.shape[0]
        if sizes is not None:
            sizes = np.asarray(sizes, dtype=np.int64)
            if sizes.sum() != n or (sizes <= 0).any():
                raise ValueError(f"block sizes {sizes.tolist()} do not split {n} rows")
        else:
            sizes = _split_sizes(n, n_blocks or default_block_count(client))
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        sparse = sp.issparse(X)
        if sparse:
            X = sp.csr_matrix(X)
        workers = list(client.nthreads())
        blocks, labels = [], []
        for i in range(len(sizes)):
            part = _as_block(X[offsets[i]:offsets[i + 1]])
            target = [workers[i % len(workers)]]
            blocks.append(client.scatter(part, workers=target, hash=False))
            if y is not None:
                yb = np.asarray(y[offsets[i]:offsets[i + 1]])
                labels.append(client.scatter(yb, workers=target, hash=False))
        return cls(client, blocks, sizes, X.shape[1], sparse, labels if y is not None else None)

    @classmethod
    def from_dask_array(cls, X, *, client: Client, y=None) -> "RowBlocks":
        """Persist a Dask array's row chunks (columns in one chunk) as blocks."""
        X = X.rechunk({1: -1})
        parts = [client.compute(d) for d in X.to_delayed().ravel()]
        blocks = [client.submit(_as_block, p, pure=False) for p in parts]
        sizes = np.array(X.chunks[0], dtype=np.int64)
        sparse = isinstance(X._meta, sp.spmatrix) or sp.issparse(X._meta)
        labels = None
        if y is not None:
            if is_dask_array(y):
                y = y.rechunk((X.chunks[0],))
                labels = [client.compute(d) for d in y.to_delayed().ravel()]
            else:
                y = np.asarray(y)
                off = np.concatenate([[0], np.cumsum(sizes)])
                labels = [client.scatter(y[off[i]:off[i + 1]], hash=False) for i in range(len(sizes))]
        wait(blocks)
        return cls(client, blocks, sizes, X.shape[1], sparse, labels)

    # properties ---------------------------------------------------------------------------
    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_rows, self.n_features)

    @property
    def n_blocks(self) -> int:
        return len(self.blocks)

    def owners(self, refresh: bool = False) -> list[str]:
        """Address of the worker that holds each block."""
        if self._owners is None or refresh:
            keep_replicas(self.client)
            deadline = time.monotonic() + 5 * POLL_SECONDS
            while True:
                self._await_blocks()
                who = self.client.who_has(self.blocks)
                owners = [sorted(who[f.key])[0] if who.get(f.key) else None for f in self.blocks]
                missing = [i for i, w in enumerate(owners) if w is None]
                if not missing:
                    break
                # A block whose worker just left: this client may learn it only after wait()
                # returned, while the scheduler already computes the block again.
                if time.monotonic() > deadline:
                    raise StateLost(f"block(s) {missing} are on no worker")
                time.sleep(0.1)
            self._owners = owners
        return self._owners

    def _await_blocks(self) -> None:
        """Wait until every block is computed; :class:`StateLost` when one never can be (a
        task of its lineage pinned to a worker that left). Every wait step past the first asks
        the scheduler to place lineage tasks it holds back needlessly
        (:func:`~.workers.unblock_lineage`)."""
        while True:
            try:
                with self.client.as_current():
                    wait(self.blocks, timeout=POLL_SECONDS)
                return
            except (TimeoutError, asyncio.TimeoutError) as exc:
                exc.__traceback__ = None  # as in _bounded: the error would hold this frame
                stuck = unblock_lineage(self.client, self.blocks)
                if stuck:
                    raise StateLost(f"the blocks wait on tasks no live worker may run: "
                                    f"{stuck[:3]}") from None

    # round trips --------------------------------------------------------------------------
    def submit(self, fn, *args, per_block=None, key: str | None = None,
               allow_other_workers: bool = True) -> list[Future]:
        """Run ``fn(i, X_i, *per_block[i], *args)`` on the worker of each block; return futures.

        The futures may outlive the call as the lineage of new blocks (a graph's, a kNN
        search's, selected rows): a lost result is recomputed from its inputs, and a
        recomputation allowed only on the worker that died could never run, so whatever waits
        on it would wait forever. Another worker may therefore run a task when the block's
        cannot; ``allow_other_workers=False`` pins it (:meth:`map`: tasks that read
        worker-held state)."""
        owners = self.owners()
        futs = []
        for i, block in enumerate(self.blocks):
            extra = tuple(per_block[i]) if per_block is not None else ()
            futs.append(self.client.submit(
                fn, i, block, *extra, *args, workers=[owners[i]] if owners[i] else None,
                allow_other_workers=allow_other_workers, pure=False,
                key=f"{key or fn.__name__}-{self.name}-{i}-{uuid.uuid4().hex[:8]}"))
        return futs

    def map(self, fn, *args, per_block=None, key: str | None = None) -> list:
        """One round trip as tasks: :meth:`submit` then gather the per-block results in block
        order. Futures among the arguments are resolved on the workers (use this when they
        appear; otherwise :meth:`call` is faster).

        Raises :class:`StateLost` when a block's worker left the cluster during the trip (its
        pinned task could never run); the caller rebuilds worker-side state and retries.
        """
        # Strict placement: worker-side state lives where the block is, and work stealing
        # would otherwise move a task away from it. The results are gathered at once, never
        # a lineage; a worker lost meanwhile raises StateLost (the bounded wait).
        futs = self.submit(fn, *args, per_block=per_block, key=key, allow_other_workers=False)
        self.round_trips += 1
        count_round_trip()
        self.bytes_moved += self.n_blocks * payload_bytes(args) + payload_bytes(per_block)
        try:
            out = self._bounded(lambda: self.client._gather(futs))
        except StateLost:
            self.client.cancel(futs)
            raise
        self.bytes_moved += payload_bytes(out)
        return out

    def call(self, fn, *args, per_block=None, combine=None) -> list:
        """One round trip by direct calls: ``fn(i, X_i, *per_block[i], *args)`` runs on the
        worker holding block ``i`` through that worker's :class:`~.direct.BlockRunner` actor;
        the results come back in block order. Arguments must be plain values (no futures).

        With ``combine`` (e.g. ``sum``), each worker returns ``combine`` of its blocks' results
        instead, and the list holds one value per worker: d-sized sums then cross the network
        once per worker, not once per block.

        Raises :class:`StateLost` when a block's worker left during the trip.
        """
        owners = self.owners()
        runners = self._runners()
        groups: dict[str, list] = {}
        for i, block in enumerate(self.blocks):
            extra = tuple(per_block[i]) if per_block is not None else ()
            groups.setdefault(owners[i], []).append((i, block.key, extra))
        self.round_trips += 1
        count_round_trip()
        self.bytes_moved += len(groups) * payload_bytes(args) + payload_bytes(per_block)

        async def results():
            return await asyncio.gather(*[run_blocks(self.client, w, runners[w], fn, items,
                                                     args, combine)
                                          for w, items in groups.items()])

        got_all = self._bounded(results)
        self.bytes_moved += payload_bytes(got_all)
        if combine is not None:
            return [got[0] for got in got_all]
        out = [None] * self.n_blocks
        for items, got in zip(groups.values(), got_all):
            for (i, _, _), r in zip(items, got):
                out[i] = r
        return out

    def _runners(self) -> dict:
        """Key of the :class:`~.direct.BlockRunner` actor on each worker that holds blocks."""
        if self._runner_futures is None:
            owners = sorted(set(self.owners()))
            futs = [self.client.submit(BlockRunner, actor=True, workers=[w],
                                       allow_other_workers=False, pure=False,
                                       key=f"block-runner-{self.name}-{uuid.uuid4().hex[:8]}")
                    for w in owners]
            self._runner_futures = futs
            try:
                self._bounded(lambda: self.client._gather(futs))
            except RuntimeError as exc:
                # Dask's verdict on an actor whose worker died as it was being created (a
                # worker kill 1 s into a GraphTransduction fit, in the fault campaign)
                if ACTOR_LOST not in str(exc):
                    raise
                raise StateLost(f"a block runner's worker left the cluster ({exc})") from None
            self._runner_keys = {w: f.key for w, f in zip(owners, futs)}
        return self._runner_keys

    def gather(self, futures: list) -> list:
        """Results of tasks pinned to the blocks' workers, with :meth:`map`'s bounded wait
        (:class:`StateLost` if one of those workers left)."""
        return self._bounded(lambda: self.client._gather(futures))

    def wait(self, futures: list) -> None:
        """Wait until ``futures`` (tasks pinned to the blocks' workers) are done, with
        :meth:`map`'s bounded wait, and raise the first task error. A plain ``wait`` would
        hang on a task pinned to a worker that died (it can never run): this raises
        :class:`StateLost` instead."""
        from distributed.client import _wait

        futures = [f for f in futures if f is not None]
        self._bounded(lambda: _wait(futures))
        for f in futures:
            if f.status == "error":
                f.result()

    def _bounded(self, make_awaitable):
        """Run the awaitable ``make_awaitable()`` makes (once) on the client's loop until done,
        checking every POLL_SECONDS that the blocks' workers are alive. A bounded wait, not
        wait-then-gather: a result whose worker dies before it is fetched would otherwise be
        waited for forever. The awaitable is shielded from each poll's timeout: cancelling it
        there restarted a transfer longer than a poll from scratch, forever (a 2 GB gather);
        it is cancelled only when the wait gives up.
        """
        task = []

        async def within():
            if not task:
                task.append(asyncio.ensure_future(make_awaitable()))
            return await asyncio.wait_for(asyncio.shield(task[0]), POLL_SECONDS)

        try:
            while True:
                try:
                    return self.client.sync(within)
                except (TimeoutError, asyncio.TimeoutError) as exc:
                    # distributed's sync keeps the error it raised in a closure of its frame:
                    # error -> traceback -> frame -> error, a cycle holding every frame of
                    # this call stack, and so the blocks' futures (the run's data on the
                    # workers) after the run, until a garbage collection finds it.
                    exc.__traceback__ = None
                    alive = set(live_workers(self.client))
                    gone = [i for i, w in enumerate(self._owners or []) if w not in alive]
                    if gone:
                        raise StateLost(f"worker of block(s) {gone} left the cluster") from None
        except BaseException:
            if task and not task[0].done():
                self.client.loop.add_callback(task[0].cancel)
            self._forget_placement()
            raise

    def _forget_placement(self) -> None:
        """Owners and runners are looked up again on the next trip (a worker left)."""
        self._owners = None
        if self._runner_futures is not None:
            self.client.cancel(self._runner_futures)
        self._runner_futures = self._runner_keys = None

    def block_slices(self) -> list[slice]:
        return [slice(int(self.offsets[i]), int(self.offsets[i + 1])) for i in range(self.n_blocks)]

    def gather_rows(self):
        """All rows on the driver, in row order: CSR for sparse blocks, else a dense array."""
        parts = self.client.gather(self.blocks)
        return sp.vstack(parts, format="csr") if self.sparse else np.vstack(parts)

    def gather_labels(self) -> np.ndarray:
        """All labels, concatenated in row order (n-sized; fine on the driver for n up to ~1e8)."""
        if self.labels is None:
            raise ValueError("these blocks carry no labels")
        return np.concatenate(self.client.gather(self.labels))

    def persist_labels(self, y) -> None:
        """Attach an in-memory label vector, split like the blocks, next to each block."""
        y = np.asarray(y)
        if y.shape[0] != self.n_rows:
            raise ValueError(f"y has {y.shape[0]} entries but the data has {self.n_rows} rows")
        owners = self.owners()
        self.labels = [self.client.scatter(y[s], workers=[owners[i]], hash=False)
                       for i, s in enumerate(self.block_slices())]
