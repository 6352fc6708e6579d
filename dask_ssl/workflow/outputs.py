"""Writing decision values: one line per input row, in input order, as ``%.10g`` text.

``np.savetxt`` formats about 10 MB/s (one Python call per value). Here a numba loop writes the
text: the value times a power of ten is taken exactly as a sum of two doubles (Dekker's
product), so the 10 significant digits are rounded as C's ``printf`` rounds them (half to even
on exact ties) and the bytes are those ``savetxt(fmt="%.10g")`` writes. Values outside the
loop's exact range (magnitudes below 1e-13 or from 1e10 on, and nan / inf) are left to Python's
``%`` formatting; there are few of them in decision values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from ..data._numbers import POW10, two_prod

_LINE = 24  # bytes a value can take: sign, 10 digits, point, "e-13"


@njit(cache=True, nogil=True)
def _digits(x, e10):
    """The 10-digit integer ``x * 10**(9 - e10)`` rounded half to even, or -1 when the scale
    is outside the exact range."""
    k = 9 - e10
    if k < 0 or k > 22:
        return -1
    hi, lo = two_prod(x, POW10[k])
    m = np.floor(hi)
    frac = hi - m  # exact; a multiple of ulp(hi) >= 2 |lo| unless it is 0
    if frac > 0.5 or (frac == 0.5 and lo > 0):
        m += 1
    elif frac == 0.5 and lo == 0 and m % 2 == 1:
        m += 1
    # Otherwise hi + lo is within half of m (frac == 0 with lo < 0 included).
    return np.int64(m)


@njit(cache=True, nogil=True)
def _format(values, n_cols, out, fallback):
    """Write ``values`` (row-major, ``n_cols`` a line) into ``out``; returns the bytes used and
    the line end offsets. Values it cannot write exactly get an empty field and ``fallback``."""
    pos = 0
    digits = np.empty(10, np.uint8)
    for i in range(values.shape[0]):
        x = values[i]
        if np.isfinite(x) and x == 0.0:
            if np.signbit(x):
                out[pos] = 45
                pos += 1
            out[pos] = 48
            pos += 1
        elif not np.isfinite(x):
            fallback[i] = True
        else:
            ax = abs(x)
            e10 = int(np.floor(np.log10(ax)))
            m = _digits(ax, e10)
            if m >= 0 and m < 10 ** 9:  # log10 came out one too high
                e10 -= 1
                m = _digits(ax, e10)
            elif m >= 10 ** 10:  # one too low, or rounded up to the next power of ten
                e10 += 1
                m = _digits(ax, e10)
            if m < 0 or m < 10 ** 9 or m >= 10 ** 10:
                fallback[i] = True
            else:
                if x < 0:
                    out[pos] = 45
                    pos += 1
                for k in range(9, -1, -1):
                    digits[k] = 48 + m % 10
                    m //= 10
                n_sig = 10
                while n_sig > 1 and digits[n_sig - 1] == 48:
                    n_sig -= 1
                if -4 <= e10 < 10:  # %f style with the trailing zeros removed
                    if e10 < 0:
                        out[pos] = 48
                        out[pos + 1] = 46
                        pos += 2
                        for _ in range(-e10 - 1):
                            out[pos] = 48
                            pos += 1
                        for k in range(n_sig):
                            out[pos] = digits[k]
                            pos += 1
                    else:
                        for k in range(max(n_sig, e10 + 1)):
                            if k == e10 + 1:
                                out[pos] = 46
                                pos += 1
                            out[pos] = digits[k] if k < n_sig else 48
                            pos += 1
                else:  # %e style: d[.ddd]e±XX
                    out[pos] = digits[0]
                    pos += 1
                    if n_sig > 1:
                        out[pos] = 46
                        pos += 1
                        for k in range(1, n_sig):
                            out[pos] = digits[k]
                            pos += 1
                    out[pos] = 101
                    out[pos + 1] = 45 if e10 < 0 else 43
                    ae = abs(e10)
                    out[pos + 2] = 48 + ae // 10
                    out[pos + 3] = 48 + ae % 10
                    pos += 4
        out[pos] = 10 if (i + 1) % n_cols == 0 else 32
        pos += 1
    return pos


def format_values(scores) -> bytes:
    """``scores`` (1-D: one value a line; 2-D: one row a line) as ``savetxt(fmt="%.10g")``
    text."""
    scores = np.asarray(scores, dtype=np.float64)
    n_cols = 1 if scores.ndim == 1 else scores.shape[1]
    flat = np.ascontiguousarray(scores).ravel()
    out = np.empty(_LINE * flat.size, np.uint8)
    fallback = np.zeros(flat.size, bool)
    used = _format(flat, n_cols, out, fallback)
    text = out[:used].tobytes()
    if not fallback.any():
        return text
    # Each fallback value left an empty field: its separator follows at once. Fill them in.
    seps = np.flatnonzero((out[:used] == 10) | (out[:used] == 32))
    pieces, at = [], 0
    for i in np.flatnonzero(fallback).tolist():
        pieces += [text[at:seps[i]], b"%.10g" % flat[i]]
        at = seps[i]
    pieces.append(text[at:])
    return b"".join(pieces)


def write_outputs(path: str, scores, *, chunk_rows: int = 2 ** 20) -> None:
    """One decision value per input row, in input order (multi-class: one column per class),
    formatted ``chunk_rows`` rows at a time (about 24 bytes of buffer a value) and written to
    a temporary file renamed into place."""
    path = Path(path)
    scores = np.asarray(scores)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        for a in range(0, len(scores), chunk_rows):
            f.write(format_values(scores[a:a + chunk_rows]))
    tmp.replace(path)
