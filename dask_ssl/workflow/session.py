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
    """Add ``--workers N | --scheduler ADDRESS``, ``--dashboard`` and ``--processes`` to a
    subcommand."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=int, metavar="N",
                   # The figures are those of dask_ssl.cluster.default_workers, written out
                   # so that building the parser does not import distributed.
                   help="start a LocalCluster with N single-threaded workers (default: one per "
                        "CPU core, fewer when that would leave a worker less than 2 GB of "
                        "memory)")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="connect to a running scheduler (tcp://host:port or tls://host:port)")
    p.add_argument("--dashboard", action="store_true",
                   help="give the LocalCluster a dashboard on 127.0.0.1 (its link is printed; "
                        "DASK_SSL_DASHBOARD=HOST:PORT sets the address and turns it on)")
    p.add_argument("--processes", action="store_true",
                   help="run the LocalCluster's workers as processes, each with its own memory "
                        "limit and a nanny that restarts it (default: threads of this process, "
                        "which start at once and pass data without copies)")


def connect(args):
    """The client the command runs on; prints the dashboard of a LocalCluster it starts."""
    from ..cluster import dashboard_link, get_client
    from ..linalg.workers import live_workers

    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be at least 1, got {args.workers}")
    # a job file written before --processes / --dashboard existed has no such flags
    processes = getattr(args, "processes", False)
    dashboard = getattr(args, "dashboard", False) or None
    for flag, given in (("--processes", processes), ("--dashboard", dashboard)):
        if given and args.scheduler is not None:
            raise CLIError(f"{flag} applies to the LocalCluster dask-ssl starts, not to "
                           f"--scheduler's cluster")
    # Neither flag: the current client when the command runs in a process that has one (tests,
    # notebooks), else a LocalCluster sized to the machine, as from a shell.
    client = get_client(scheduler=args.scheduler, n_workers=args.workers, processes=processes,
                        dashboard=dashboard)
    if args.scheduler is None:
        link = dashboard_link(client)
        print(f"dask-ssl: LocalCluster with {len(live_workers(client))} "
              f"{'worker processes' if processes else 'workers'}"
              f"{f', dashboard {link}' if link else ''}", file=sys.stderr)
    return client
