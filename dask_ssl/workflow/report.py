"""A run's report: ``report.json`` and PNG plots of the per-stage history, of label sweeps and of
the estimator's selection on the labeled rows.

Plots are drawn with matplotlib's object API on an Agg canvas (no pyplot), so writing a report
never touches the process-wide backend or opens a window.
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

from ..models.artifact import redact
from .store import write_json_atomic

_PACKAGES = ("dask-ssl", "dask", "distributed", "numpy", "scipy", "scikit-learn", "numba")

#: Per-stage history keys that are plotted against the stage, each in its own panel
#: (``bound``: branch and bound's lower bound against the nodes evaluated).
_SERIES = ("objective", "bound", "switches", "entropy")

#: Names of DA's annealings in a history's ``start`` (see :class:`dask_ssl.models.DAS3VM`).
START_NAMES = ("first annealing", "cold start")

#: History keys that say which stage a record belongs to, in order of preference.
_STAGE_KEYS = ("stage", "newton_step", "T", "node")


def versions() -> dict:
    """Versions of Python and of the packages that determine a run's numbers."""
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def write_report(run_dir: Path, report: dict) -> Path:
    path = Path(run_dir) / "report.json"
    write_json_atomic(path, redact(report))
    return path


def _figure(width=6.0, height=3.6):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _histories(history) -> list[list[dict]]:
    """One list of records per binary problem (one-vs-rest gives a list of lists); a trace of
    plain numbers (a sparse model's objective after each basis function) is its objective."""
    if not history:
        return []
    runs = history if isinstance(history[0], list) else [history]
    return [[r if isinstance(r, dict) else {"objective": float(r)} for r in h] for h in runs]


def history_lines(history) -> tuple[list, str | None]:
    """The lines :func:`plot_history` draws, as ``(label, series, xs, ys)``, and the x key.

    One line per binary problem (labelled where there are several) and, for DA, per
    annealing (its cold start is its own line, not one that runs back to stage 0)."""
    runs = [h for h in _histories(history) if h]
    series = [k for k in _SERIES if any(k in r for h in runs for r in h)]
    lines, stage_key = [], None
    for k, records in enumerate(runs):
        stage_key = next((s for s in _STAGE_KEYS if s in records[0]), None)
        xs = [r[stage_key] if stage_key else i for i, r in enumerate(records)]
        starts = sorted({r.get("start", 0) for r in records})
        for start in starts:
            label = ", ".join(([f"problem {k}"] if len(runs) > 1 else [])
                              + ([START_NAMES[start]] if len(starts) > 1 else [])) or None
            for name in series:
                pts = [(x, r[name]) for x, r in zip(xs, records)
                       if r.get("start", 0) == start and r.get(name) is not None]
                if pts:
                    lines.append((label, name, *map(list, zip(*pts))))
    return lines, stage_key


def plot_history(history, path: Path, title: str) -> Path | None:
    """Objective (and switches / entropy when recorded) per stage; None when nothing to plot."""
    lines, stage_key = history_lines(history)
    series = [k for k in _SERIES if any(name == k for _, name, _, _ in lines)]
    if not series:
        return None
    fig = _figure(height=2.6 * len(series))
    axes = dict(zip(series, fig.subplots(len(series), 1, sharex=True, squeeze=False)[:, 0]))
    for label, name, xs, ys in lines:
        axes[name].plot(xs, ys, marker="o", markersize=3, label=label)
    for name, ax in axes.items():
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
        if name == "objective":
            ax.set_yscale("symlog", linthresh=1e-6)
    first = axes[series[0]]
    if any(label is not None for label, *_ in lines):
        first.legend(fontsize="small")
    axes[series[-1]].set_xlabel(stage_key or "record")
    first.set_title(title)
    fig.savefig(path)
    return path


def plot_sweep(sweep: list[dict], metric: str, path: Path, title: str) -> Path | None:
    """``metric`` against the number of labeled rows, one point per swept value."""
    pts = [(s["n_labeled"], s["metrics"][metric]) for s in sweep if metric in s["metrics"]]
    if len(pts) < 2:
        return None
    fig = _figure()
    ax = fig.subplots()
    ax.plot(*zip(*sorted(pts)), marker="o")
    ax.set_xscale("log")
    ax.set_xlabel("labeled rows")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.savefig(path)
    return path


#: Columns of a selection table that score a candidate rather than name its settings.
_SCORES = ("errors", "error", "stderr", "squared", "passed", "chosen", "criterion")


def plot_selection(selection: list[dict], path: Path, title: str) -> Path | None:
    """Held-out error rate (with one standard error) of each candidate the estimator tried on
    its labeled rows (``selection_``, :mod:`dask_ssl.models._selection`), the chosen one
    filled; None when nothing was chosen among several."""
    rows = [r for r in selection or [] if "error" in r]
    if len(rows) < 2:
        return None
    # one setting a line under each candidate: several settings side by side do not fit
    labels = ["\n".join(f"{k}={_short(v)}" for k, v in r.items()
                         if k not in _SCORES and v is not None) or "supervised" for r in rows]
    lines = max(label.count("\n") + 1 for label in labels)
    widest = max(len(part) for label in labels for part in label.split("\n"))
    fig = _figure(width=max(6.0, (0.12 * lines + 0.25) * len(rows) + 1.5),
                  height=3.4 + 0.06 * widest)
    ax = fig.subplots()
    xs = range(len(rows))
    ax.errorbar(xs, [100 * r["error"] for r in rows], yerr=[100 * r["stderr"] for r in rows],
                fmt="o", mfc="white", capsize=3)
    chosen = [i for i, r in enumerate(rows) if r.get("chosen")]
    ax.plot(chosen, [100 * rows[i]["error"] for i in chosen], "o", color="C1", zorder=3,
            label="chosen")
    ax.set_xticks(list(xs), labels, rotation=90, fontsize="x-small")
    ax.set_ylabel("held-out error on labeled rows (%)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.savefig(path)
    return path


def _short(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
