"""Workflow files, the runner, the model store, reports and nightly retraining.

A workflow file describes a job once (data, split, estimator, evaluation, outputs); the same file
runs on a laptop's LocalCluster, on a team's cluster (``--scheduler``, ``--detach``) and every
night from fresh data (``dask-ssl retrain``).
"""
