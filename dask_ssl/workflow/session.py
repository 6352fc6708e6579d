"""What every ``dask-ssl`` subcommand shares: the cluster flags, the client, user-facing errors.

Kept below :mod:`dask_ssl.cli` and the workflow commands so that both import it and nothing
imports the command-line module itself.
"""

from __future__ import annotations

import argparse
import sys


class CLIError(Exception):
    """A user-facing error: printed as ``dask-ssl: error: ...`` with exit status 2."""


def cluster_args(p: argparse.ArgumentParser) -> None:
    """Add ``--workers N | --scheduler ADDRESS`` to a subcommand."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, metavar="N",
                   # The figures are those of dask_ssl.cluster.default_workers, written out
                   # so that building the parser does not import distributed.
                   help="start a LocalCluster with N single-threaded workers (default: one per "
                        "CPU core, fewer when that would leave a worker less than 2 GB of "
                        "memory)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="connect to a running scheduler (tcp://host:port or tls://host:port)")


def connect(args):
    """The client the command runs on; prints the dashboard of a LocalCluster it starts."""
    from ..cluster import get_client

    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be at least 1, got {args.workers}")
    # Neither flag: the current client when the command runs in a process that has one (tests,
    # notebooks), else a LocalCluster sized to the machine, as from a shell.
    client = get_client(scheduler=args.scheduler, n_workers=args.workers)
    if args.scheduler is None:
        print(f"dask-ssl: LocalCluster with {len(client.scheduler_info()['workers'])} workers, "
              f"dashboard {client.dashboard_link}", file=sys.stderr)
    return client
