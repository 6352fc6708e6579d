"""Writing decision values: one line per input row, in input order."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_outputs(path: str, scores) -> None:
    """One decision value per input row, in input order (multi-class: one column per class)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    np.savetxt(tmp, np.asarray(scores), fmt="%.10g")
    tmp.replace(path)
