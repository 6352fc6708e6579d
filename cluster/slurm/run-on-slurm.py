"""Start Dask workers as SLURM jobs (dask-jobqueue), run a dask-ssl command on them, stop them.

    DASK_CONFIG=cluster/slurm/jobqueue.yaml python cluster/slurm/run-on-slurm.py --jobs 8 \
        -- run workflows/kdd99.yaml
    DASK_CONFIG=cluster/slurm/jobqueue.yaml python cluster/slurm/run-on-slurm.py --jobs 4 \
        -- retrain workflows/nightly-retrain.yaml

The scheduler runs in this process (keep it on a login or service node); the workers are batch
jobs configured by jobqueue.yaml. Everything after ``--`` is a dask-ssl command line, to which
``--scheduler ADDRESS`` is added.
"""

import argparse
import sys

from dask_jobqueue import SLURMCluster
from distributed import Client

from dask_ssl.cli import main


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=2, help="SLURM jobs (= Dask workers) to start")
    p.add_argument("--wait", type=float, default=600, help="seconds to wait for the workers")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- dask-ssl arguments")
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        p.error("give a dask-ssl command after --, e.g. -- run workflows/quickstart.yaml")
    return args


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    with SLURMCluster() as cluster:
        cluster.scale(jobs=args.jobs)
        with Client(cluster) as client:
            client.wait_for_workers(args.jobs, timeout=args.wait)
        sys.exit(main([*args.command, "--scheduler", cluster.scheduler_address]))
