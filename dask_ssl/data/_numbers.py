"""Decimal number parsing inside numba loops.

The readers tokenize text in numba and must turn digits into float64 values *exactly* as
Python's ``float`` would. Clinger's fast path is exact when the decimal mantissa fits in 53
bits and the power of ten is at most 22 (both are then exact doubles and one IEEE operation
rounds once); that covers nearly every value real files hold. Mantissas of 54-57 bits with a
decimal fraction (``repr`` and ``%.17g`` output: 17 digits) are divided with an exact
residual check. The rest (longer mantissas, large exponents, ties too close to call) is
flagged and converted afterwards by Python, which rounds correctly.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

#: Parsed exactly by :func:`parse_number`.
EXACT = 0
#: Valid syntax, but the value must be converted by :func:`convert_flagged`.
FLAGGED = 1
#: Not a number.
INVALID = -1

#: Powers of ten that are exact doubles, and the largest mantissa that is exact: a value
#: ``mantissa / POW10[k]`` within both is rounded once, so it is what ``float`` gives.
POW10 = np.array([10.0 ** k for k in range(23)])
MAX_EXACT = 2 ** 53


@njit(cache=True, nogil=True)
def _lower(c):
    return c + 32 if 65 <= c <= 90 else c


@njit(cache=True, nogil=True)
def _is_special(buf, s, e):
    # nan, inf, infinity in any case: valid for float(), left to NumPy.
    n = e - s
    if n == 3:
        a, b, c = _lower(buf[s]), _lower(buf[s + 1]), _lower(buf[s + 2])
        return (a == 110 and b == 97 and c == 110) or (a == 105 and b == 110 and c == 102)
    if n == 8:
        word = (105, 110, 102, 105, 110, 105, 116, 121)
        for k in range(8):
            if _lower(buf[s + k]) != word[k]:
                return False
        return True
    return False


@njit(cache=True, nogil=True)
def parse_number(buf, s, e):
    """Parse ``buf[s:e]`` (uint8) as a decimal float.

    Returns
    -------
    status : int
        ``EXACT`` (value is final), ``FLAGGED`` (syntax valid, convert with NumPy) or
        ``INVALID``.
    value : float
    """
    if s >= e:
        return INVALID, 0.0
    neg = False
    p = s
    if buf[p] == 43 or buf[p] == 45:  # + -
        neg = buf[p] == 45
        p += 1
    if p < e and (_lower(buf[p]) == 110 or _lower(buf[p]) == 105):
        return (FLAGGED if _is_special(buf, p, e) else INVALID), 0.0
    mant = 0
    exact = True
    n_digits = 0
    n_frac = 0
    while p < e and 48 <= buf[p] <= 57:
        if mant <= MAX_EXACT:
            mant = mant * 10 + (buf[p] - 48)
        else:
            exact = False
        n_digits += 1
        p += 1
    if p < e and buf[p] == 46:  # .
        p += 1
        while p < e and 48 <= buf[p] <= 57:
            if mant <= MAX_EXACT:
                mant = mant * 10 + (buf[p] - 48)
                n_frac += 1
            else:
                exact = False
            n_digits += 1
            p += 1
    if n_digits == 0:
        return INVALID, 0.0
    exp = 0
    if p < e and (buf[p] == 101 or buf[p] == 69):  # e E
        p += 1
        exp_neg = False
        if p < e and (buf[p] == 43 or buf[p] == 45):
            exp_neg = buf[p] == 45
            p += 1
        if p >= e:
            return INVALID, 0.0
        while p < e and 48 <= buf[p] <= 57:
            if exp < 100000:
                exp = exp * 10 + (buf[p] - 48)
            p += 1
        if exp_neg:
            exp = -exp
    if p != e:
        return INVALID, 0.0
    if mant == 0:
        return EXACT, -0.0 if neg else 0.0
    e10 = exp - n_frac
    if not exact or e10 > 22 or e10 < -22:
        return FLAGGED, 0.0
    if mant <= MAX_EXACT:
        value = mant * POW10[e10] if e10 >= 0 else mant / POW10[-e10]
    elif e10 == 0:
        value = float(mant)  # one rounding, to nearest even
    elif e10 < 0:
        ok, value = _divide_exact(mant, -e10)
        if not ok:
            return FLAGGED, 0.0
    else:
        return FLAGGED, 0.0
    return EXACT, -value if neg else value


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's splitter for doubles


@njit(cache=True, nogil=True)
def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e == a * b`` exactly (Dekker; no FMA)."""
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


@njit(cache=True, nogil=True)
def _divide_exact(mant, k):
    """``mant / 10**k`` rounded once, for ``2**53 < mant < 2**57`` and ``0 < k <= 22``; returns
    ``(False, 0.0)`` when the quotient is too near a rounding boundary to decide here.

    A candidate q is right when the residual ``mant - q * 10**k`` is below half of
    ``ulp(q) * 10**k``. The residual is computed exactly but for one last rounding: q * 10**k
    as an exact sum of two doubles, mant as a double plus an integer remainder (so the
    difference of the large parts is exact). That rounding is far smaller than the margin
    kept, except at or next to a tie, which is left to the caller.
    """
    scale = POW10[k]
    big = float(mant)
    rest = float(mant - np.int64(big))
    q = big / scale
    for _ in range(3):
        hi, lo = two_prod(q, scale)
        resid = ((big - hi) + rest) - lo
        frac, ex = math.frexp(q)
        ulp = math.ldexp(1.0, ex - 53)
        half = 0.5 * ulp * scale
        if abs(resid) < half * (1.0 - 1e-9):
            return True, q
        if abs(resid) <= half * (1.0 + 1e-9):
            return False, 0.0
        if resid > 0:
            q += ulp
        else:
            # Below a power of two the spacing halves.
            q -= 0.5 * ulp if frac == 0.5 else ulp
    return False, 0.0


def convert_flagged(buf, starts, ends) -> np.ndarray:
    """Convert the flagged number tokens ``buf[starts[k]:ends[k]]`` with NumPy's rounding."""
    if len(starts) == 0:
        return np.empty(0)
    raw = bytes(buf)
    # Python's float on each token: correctly rounded, and faster than NumPy's conversion of an
    # array of byte strings.
    return np.array([float(raw[s:e]) for s, e in zip(starts.tolist(), ends.tolist())],
                    dtype=np.float64)
