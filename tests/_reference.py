"""Single-process NumPy references of the linear S3VMs, written straight from the thesis
formulas (ch. 6) to check the distributed estimators against. Dense, small data only."""

import numpy as np
import scipy.optimize
from scipy.special import expit, entr, rel_entr


def augment(X):
    return np.column_stack([X, np.ones(X.shape[0])])


def loss(o, cpos, cneg):
    return 0.5 * np.sum(cpos * np.maximum(0, 1 - o) ** 2 + cneg * np.maximum(0, 1 + o) ** 2)


def mfn(Xa, cpos, cneg, gamma, w, tau=1e-6):
    """l2-SVM-MFN (6.2): Newton steps on the active set, exact line search, stop when stable."""
    f = lambda v: 0.5 * gamma * v @ v + loss(Xa @ v, cpos, cneg)
    for _ in range(200):
        o = Xa @ w
        pos, neg = o < 1, o > -1
        a = cpos * pos + cneg * neg
        b = cpos * pos - cneg * neg
        wbar = np.linalg.solve(gamma * np.eye(len(w)) + Xa.T @ (a[:, None] * Xa), Xa.T @ b)
        on = Xa @ wbar
        ok = (np.all(on[pos & (cpos > 0)] < 1 + tau) and np.all(on[~pos & (cpos > 0)] >= 1 - tau)
              and np.all(-on[neg & (cneg > 0)] < 1 + tau)
              and np.all(-on[~neg & (cneg > 0)] >= 1 - tau))
        if ok:
            return wbar
        step = scipy.optimize.minimize_scalar(lambda t: f(w + t * (wbar - w)), bounds=(0, 4),
                                              method="bounded", options={"xatol": 1e-13}).x
        w = w + step * (wbar - w)
    raise RuntimeError("reference MFN did not converge")


def tsvm_objective(Xa, y, w, gamma, gamma_u):
    lab = y != 0
    o = Xa @ w
    l, u = lab.sum(), (~lab).sum()
    return (0.5 * gamma * w @ w + 0.5 / l * np.sum(np.maximum(0, 1 - y[lab] * o[lab]) ** 2)
            + 0.5 * gamma_u / u * np.sum(np.maximum(0, 1 - np.abs(o[~lab])) ** 2))


def tsvm(X, y, gamma, gamma_u, r, S):
    """Multi-switch TSVM (6.3): returns the per-stage objectives and the final w."""
    Xa = augment(X)
    lab = y != 0
    l, u = lab.sum(), (~lab).sum()
    cl = np.where(lab, 1.0 / l, 0.0)
    w = mfn(Xa, cl * (y > 0), cl * (y < 0), gamma, np.zeros(Xa.shape[1]))
    o = Xa @ w
    unl = np.flatnonzero(~lab)
    npos = int(round(r * u))
    order = unl[np.argsort(-o[unl], kind="stable")]
    yt = np.zeros(len(y))
    yt[unl] = -1
    yt[order[:npos]] = 1
    path = []
    g = min(1e-5, gamma_u)
    while True:
        cu = g / u
        def costs():
            return cl * (y > 0) + cu * (yt > 0), cl * (y < 0) + cu * (yt < 0)
        w = mfn(Xa, *costs(), gamma, w)
        while True:
            o = Xa @ w
            P = [j for j in unl if yt[j] > 0 and o[j] < 1]
            N = [j for j in unl if yt[j] < 0 and o[j] > -1]
            P.sort(key=lambda j: o[j])
            N.sort(key=lambda j: -o[j])
            k = 0
            while k < min(len(P), len(N), S) and o[P[k]] < o[N[k]]:
                k += 1
            if k == 0:
                break
            yt[P[:k]] = -1
            yt[N[:k]] = 1
            w = mfn(Xa, *costs(), gamma, w)
        path.append(tsvm_objective(Xa, y, w, gamma, g))
        if g >= gamma_u:
            return path, w
        g = min(g * 1.5, gamma_u)


def da(X, y, gamma, gamma_u, r, T0=10.0, R=1.5, eps=1e-6):
    """Deterministic annealing (6.4): per-temperature TSVM objectives and the best w."""
    Xa = augment(X)
    lab = y != 0
    l, u = lab.sum(), (~lab).sum()
    cl = np.where(lab, 1.0 / l, 0.0)
    cu = gamma_u / u
    r = round(r * u) / u
    p = np.where(lab, 0.0, r)
    w = np.zeros(Xa.shape[1])
    T = T0
    path, best, H_prev = [], (np.inf, None), np.inf
    while True:
        while True:
            w = mfn(Xa, cl * (y > 0) + cu * p * ~lab, cl * (y < 0) + cu * (1 - p) * ~lab, gamma, w)
            obj = tsvm_objective(Xa, y, w, gamma, gamma_u)
            if obj < best[0]:
                best = (obj, w.copy())
            o = (Xa @ w)[~lab]
            g = gamma_u * (np.maximum(0, 1 - o) ** 2 - np.maximum(0, 1 + o) ** 2)
            bal = lambda nu: expit((2 * nu - g) / T).mean() - r
            nu = scipy.optimize.brentq(bal, (g.min() + T * np.log(r / (1 - r))) / 2 - 1e-9,
                                       (g.max() + T * np.log(r / (1 - r))) / 2 + 1e-9, xtol=1e-14)
            q = p[~lab]
            pu = expit((2 * nu - g) / T)
            kl = np.sum(rel_entr(pu, q) + rel_entr(1 - pu, 1 - q))
            p = p.copy()
            p[~lab] = pu
            if kl < u * eps:
                break
        path.append(obj)
        H = np.sum(entr(pu) + entr(1 - pu))
        if H < u * eps or abs(H_prev - H) < u * eps:
            return path, best
        H_prev = H
        T /= R
