"""Pickling estimators whose fitted graph lives on the workers of the fit's client."""

from __future__ import annotations


class PicklesWithoutGraph:
    """Leave the fitted ``graph_`` out of a pickle.

    ``graph_`` is row blocks held on the workers (futures of the fit's client): they do not
    pickle, and they are gone with that client anyway. Prediction does not read the graph, so a
    pickled estimator (joblib, a dask task) predicts the same; the unpickled one has no
    ``graph_`` (save it with :func:`dask_ssl.graph.io.save_graph` to keep it).
    """

    def __getstate__(self):
        # a copy: object.__getstate__ returns the instance's own __dict__
        state = dict(super().__getstate__())
        state.pop("graph_", None)
        return state
