"""examples/pytorch_ddp.py's job and mistakes with Recorder(on_finding=...): what each rank saw, one JSON per rank.

    PYTHONPATH=python /usr/bin/python3 tests/python/ddp_alert_job.py --out RUN.h5 --results DIR
        [--mistake none|not-synced|sdc-after|...] [--steps 20] [--ranks 4] [--on-finding raise|warn|call]
        [--check-every K] [--watch-cli CLI] [--check-timeout S]

The example's own worker runs unchanged, with its Recorder given on_finding and check_every. DIR/rankR.json
holds: the alert (cause, step, ranks, finding) when RankSightAlert was raised, the steps the rank recorded,
the RankSightWarnings it got, the findings a callable on_finding received, and on rank 0 the watch child's
pid (to tell that it is gone), or the error that stopped the recorder from starting.
"""

import argparse
import json
import os
import sys
import warnings

import torch.distributed as dist
import torch.multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import pytorch_ddp  # noqa: E402
from ranksight.ddp import Recorder, RankSightAlert, RankSightWarning  # noqa: E402


def run(rank, args, port):
    calls, recorders = [], []

    def recorder(*a, **kw):
        on_finding = calls.append if args.on_finding == "call" else args.on_finding
        recorders.append(Recorder(*a, on_finding=on_finding, check_every=args.check_every, watch_cli=args.watch_cli,
                                  check_timeout=args.check_timeout, **kw))
        watch = recorders[-1]._watch
        outcome["watch_pid"] = watch.proc.pid if watch is not None else None
        return recorders[-1]

    pytorch_ddp.Recorder = recorder
    outcome = {"rank": rank, "alert": None, "error": None, "watch_pid": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RankSightWarning)
        try:
            pytorch_ddp.worker(rank, example_args(args), port)
        except RankSightAlert as alert:
            outcome["alert"] = {"cause": alert.cause, "step": alert.step, "ranks": alert.ranks,
                                "finding": alert.finding, "message": str(alert)}
            dist.destroy_process_group()
        except RuntimeError as e:  # the recorder could not start (no ranksight-cli): on every rank alike
            outcome["error"] = str(e)
            dist.destroy_process_group()
    outcome["steps_recorded"] = recorders[0].steps if recorders else 0
    outcome["warnings"] = [str(w.message) for w in caught if issubclass(w.category, RankSightWarning)]
    outcome["calls"] = calls
    with open(os.path.join(args.results, "rank%d.json" % rank), "w") as f:
        json.dump(outcome, f)


def example_args(args):
    """The example's own arguments, as its command line would give them."""
    return argparse.Namespace(out=args.out, ranks=args.ranks, steps=args.steps, batch=16, lr=0.05, seed=1,
                              mistake=args.mistake, no_sample_ids=False, comm_hook="allreduce")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--results", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--mistake", choices=pytorch_ddp.MISTAKES, default="none")
    ap.add_argument("--on-finding", choices=["raise", "warn", "call"], default="raise")
    ap.add_argument("--check-every", type=int, default=5)
    ap.add_argument("--watch-cli", default=None)
    ap.add_argument("--check-timeout", type=float, default=60.0)
    args = ap.parse_args()
    os.makedirs(args.results, exist_ok=True)
    # Forked as the example does (its parent has run no torch op, so no thread pool is forked).
    mp.start_processes(run, args=(args, pytorch_ddp.free_port()), nprocs=args.ranks, join=True,
                       start_method="fork")


if __name__ == "__main__":
    main()
