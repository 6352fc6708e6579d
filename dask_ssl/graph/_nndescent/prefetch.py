"""Prefetch hints for rows a kernel is about to compare (dense or CSR, like :mod:`.distances`).

The graph search reads rows scattered over a block, and the rows one of its steps compares are
known before the step starts: requesting their cache lines together lets the waits for memory
overlap. A hint changes no result.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


@intrinsic
def _prefetch(typingctx, arr, i):
    """Ask the CPU to bring the cache line holding ``arr[i]`` closer (a hint: no fault, no
    effect on results)."""
    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
            "llvm.prefetch.p0i8")
        # read access, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(builder.gep(ary.data, [args[1]]), i8p),
                          ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(arr, i), codegen


def prefetch_start(A, j):  # pragma: no cover - replaced by the overload in compiled code
    """Prefetch what locating row ``j`` of ``A`` reads (compiled code only)."""
    raise NotImplementedError


def prefetch_row(A, j):  # pragma: no cover - replaced by the overload in compiled code
    """Prefetch row ``j`` of ``A`` (compiled code only)."""
    raise NotImplementedError


# The graph search reads rows scattered over the block: on RCV1-like rows (77
# entries, ~10 cache lines in two arrays) a distance from memory cost 0.6 us against 0.12 us
# from cache, nearly all of it waiting. The rows a step will compare are known beforehand (a
# node's neighbours, a query's seeds), so their lines are requested together first and the
# waits overlap: 25 M distances to known rows took 15 -> 5 s; the cross-block search of
# 25 k RCV1-like rows against 25 k, 6.5 -> 5.3 s (same lists).

@overload(prefetch_start)
def _prefetch_start_overload(A, j):
    if isinstance(A, types.Array):
        return lambda A, j: None

    def sparse(A, j):
        _prefetch(A[0], j)
    return sparse


@overload(prefetch_row)
def _prefetch_row_overload(A, j):
    if isinstance(A, types.Array):
        def dense(A, j):
            for t in range(0, A.shape[1], 16):
                _prefetch(A[j], t)
        return dense

    def sparse(A, j):
        ap, ai, ax = A
        p0 = ap[j]
        for o in range(0, ap[j + 1] - p0, 16):
            _prefetch(ai, p0 + o)
            _prefetch(ax, p0 + o)
    return sparse
