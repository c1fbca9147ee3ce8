"""What ranksight.ddp.Recorder costs a real DDP job: the same job with and without it, side by side.

    PYTHONPATH=python /usr/bin/python3 bench/ddp_recorder_bench.py [--model resnet18|smallcnn] [--ranks 4]
        [--batch 8] [--steps 8] [--warmup 2] [--rounds 2] [--check-every 10] [--cli RANKSIGHT_CLI] [--json]

Each round runs the job three times, plain DDP, DDP with the recorder (every statistic, the sketch,
fingerprints, weights every 10 steps, the run file flushed every step), then DDP with the recorder and
on_finding="raise" (rank 0's `ranksight-cli watch` child asked every --check-every steps, one flag all-reduced),
each in its own N gloo processes on 127.0.0.1; throughput is measured on rank 0 over the steps after the
warm-up. Prints img/s of each, the ratio of each round (the runs of a round are side by side, so they share the
machine's mood) and their median (target: >= 0.97), and where the recorder's own time goes on rank 0
(Recorder.cost_ms). The machine is noisy: read the ratios, not the figures. The on_finding run needs
ranksight-cli (--cli, $RANKSIGHT_CLI or PATH); without one it is left out and the output says so. Each rank
reads its own batch (sample ids of its own): a job whose ranks read the same batch is a finding (shard-overlap)
that would stop the on_finding run.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from ddp_peer import make  # noqa: E402  (the peer's CIFAR ResNets: one definition of the models)
from pytorch_ddp import SmallCNN  # noqa: E402
from ranksight.ddp import Recorder, RankSightAlert  # noqa: E402
from ranksight.gradstats import GradStats, kernel_info  # noqa: E402


# The three jobs of a round: plain DDP, with the recorder, with the recorder acting on findings.
PLAIN, RECORDED, CHECKED = "plain", "recorded", "checked"


def recorder(ddp, args, mode, out_file):
    if mode == PLAIN:
        return None
    checks = dict(on_finding="raise", check_every=args.check_every, watch_cli=args.cli) if mode == CHECKED else {}
    return Recorder(ddp, out_file, batch_size=args.batch, model_name=args.model, **checks)


def worker(rank, args, port, mode, out_file, result_file):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(1)
    model = make("resnet18") if args.model == "resnet18" else SmallCNN()
    ddp = DistributedDataParallel(model)
    rec = recorder(ddp, args, mode, out_file)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(100 + rank)  # each rank its own batch, as a sharded loader gives
    x = torch.randn(args.batch, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (args.batch,), generator=g)
    ids = list(range(rank * args.batch, (rank + 1) * args.batch))
    start, alert = None, None
    try:
        for step in range(args.warmup + args.steps):
            if step == args.warmup:
                dist.barrier()
                start = time.perf_counter()
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if rec is not None:
                rec.step(loss=loss.item(), sample_ids=ids)
    except RankSightAlert as e:  # a clean job named: the figure would be a stopped job's, so none is given
        alert = str(e)
    dist.barrier()
    elapsed = time.perf_counter() - start
    cost = rec.cost_ms() if rec is not None else {}
    checks = rec.steps // rec.check_every if mode == CHECKED else 0
    if rec is not None:
        rec.close()
    if rank == 0:
        with open(result_file, "w") as f:
            json.dump({"img_s": args.steps * args.batch * args.ranks / elapsed,
                       "step_ms": elapsed * 1000.0 / args.steps, "cost_ms": cost, "checks": checks,
                       "alert": alert}, f)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(args, mode, tmp):
    result = os.path.join(tmp, "result")
    mp.spawn(worker, args=(args, free_port(), mode, os.path.join(tmp, "bench.h5"), result),
             nprocs=args.ranks, join=True)
    with open(result) as f:
        res = json.load(f)
    if res["alert"]:
        raise SystemExit("ddp_recorder_bench: the bench job itself has a finding, so on_finding stopped it: %s"
                         % res["alert"])
    return res


def find_cli(given):
    cli = given or os.environ.get("RANKSIGHT_CLI") or shutil.which("ranksight-cli")
    return cli if cli and os.access(cli, os.X_OK) else None


def read_cost(args, tmp):
    """What the recorder's gradient statistics cost against one read of the gradient, measured alone (one
    process, one thread, caches flushed before each run): the medians of 8 runs over the model's gradient
    shapes, in ms. Against the plain step these say how much a fused single pass per side would save."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(free_port())
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        torch.manual_seed(1)
        model = make("resnet18") if args.model == "resnet18" else SmallCNN()
        rec = Recorder(DistributedDataParallel(model), os.path.join(tmp, "cost.h5"), batch_size=args.batch)
        grads = [torch.randn(p.numel()) for _, p in rec.params]
        flush = torch.empty(64 << 20)

        def median_ms(f):
            times = []
            for _ in range(8):
                flush.fill_(1.0)
                start = time.perf_counter()
                f()
                times.append((time.perf_counter() - start) * 1000.0)
            return statistics.median(times)

        one_read = median_ms(lambda: [g.sum() for g in grads])
        rows = list(range(len(grads)))
        local_out, sketch = np.zeros((len(grads), 6)), np.zeros((len(grads), rec.K))
        synced_out, fp = np.zeros((len(grads), 2)), np.zeros(len(grads), dtype=np.uint64)
        res = {"gradient_mib": sum(g.numel() for g in grads) * 4 / 2**20, "one_read_ms": one_read,
               "kernel": rec.stats.kernel, "bodies": kernel_info()[2] if rec.stats.kernel == "native" else "-"}
        # The recorder's own kernel, and the torch passes it replaces when the native one is built.
        kernels = [("", rec.stats)]
        if rec.stats.kernel == "native":
            kernels.append(("torch_", GradStats([g.numel() for g in grads], rec.K, native=False)))
        for prefix, stats in kernels:
            res[prefix + "local_ms"] = median_ms(lambda: stats.local(rows, grads, local_out, sketch, counts=False))
            res[prefix + "synced_ms"] = median_ms(lambda: stats.synced(rows, grads, synced_out, fp))
        rec.close()
        return res
    finally:
        dist.destroy_process_group()


def checks_in_window(args):
    """How many checks fall in the timed steps (after the warm-up): those at steps s with (s + 1) % K == 0."""
    return sum(1 for s in range(args.warmup, args.warmup + args.steps) if (s + 1) % args.check_every == 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["resnet18", "smallcnn"], default="resnet18")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--check-every", type=int, default=10, help="on_finding's check_every (the recorder's default)")
    ap.add_argument("--cli", default=None, help="ranksight-cli for on_finding (default $RANKSIGHT_CLI, then PATH)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.cli = find_cli(args.cli)
    plain, recorded, ratios, costs = [], [], [], []
    checked, check_ratios, check_plain_ratios, check_costs = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            a = run(args, PLAIN, tmp)
            b = run(args, RECORDED, tmp)
            plain.append(a["img_s"])
            recorded.append(b["img_s"])
            ratios.append(b["img_s"] / a["img_s"])
            costs.append(b["cost_ms"])
            line = "round %d: plain DDP %.1f img/s, with the recorder %.1f img/s (%.3f)" % (
                r + 1, plain[-1], recorded[-1], ratios[-1])
            if args.cli:
                c = run(args, CHECKED, tmp)
                checked.append(c["img_s"])
                check_ratios.append(c["img_s"] / b["img_s"])
                check_plain_ratios.append(c["img_s"] / a["img_s"])
                check_costs.append(c["cost_ms"]["check"] * (args.warmup + args.steps) / max(c["checks"], 1))
                line += ", with on_finding %.1f img/s (%.3f of the recorder's)" % (checked[-1], check_ratios[-1])
            print(line, file=sys.stderr)
            step_ms = a["step_ms"]
    p, q, ratio = statistics.median(plain), statistics.median(recorded), statistics.median(ratios)
    cost = {k: round(statistics.median(c[k] for c in costs), 2) for k in costs[0]}
    res = {"model": args.model, "ranks": args.ranks, "batch_per_rank": args.batch, "steps": args.steps,
           "rounds": args.rounds, "plain_img_s": round(p, 2), "recorded_img_s": round(q, 2),
           "recorded_vs_plain": round(ratio, 3), "round_ratios": [round(x, 3) for x in ratios],
           "recorder_cost_ms_rank0": cost, "check_every": args.check_every}
    if checked:
        res.update(checked_img_s=round(statistics.median(checked), 2),
                   checked_vs_recorded=round(statistics.median(check_ratios), 3),
                   checked_vs_plain=round(statistics.median(check_plain_ratios), 3),
                   checked_round_ratios=[round(x, 3) for x in check_ratios],
                   check_ms=round(statistics.median(check_costs), 1))
    with tempfile.TemporaryDirectory() as tmp:
        res["statistics_alone_ms"] = read_cost(args, tmp)
    if args.json:
        print(json.dumps(res))
    else:
        print("%s, %d ranks x batch %d, gloo on 127.0.0.1, %d rounds" % (args.model, args.ranks, args.batch,
                                                                       args.rounds))
        print("plain DDP                %.1f img/s (median)" % p)
        print("DDP + ranksight.Recorder %.1f img/s (median)" % q)
        print("recorded / plain         %.3f (median of the rounds' ratios %s; target >= 0.98)"
              % (ratio, ", ".join("%.3f" % x for x in ratios)))
        print("recorder's own time on rank 0, ms per step (plain step %.0f ms): %s, total %.1f"
              % (step_ms, ", ".join("%s %.1f" % kv for kv in cost.items()), sum(cost.values())))
        if checked:
            # Its own lines, after the recorder's: tools/bench-report reads the lines above by their words.
            print("DDP + Recorder(on_finding=\"raise\", check_every=%d) %.1f img/s (median)"
                  % (args.check_every, res["checked_img_s"]))
            print("on_finding / recorder    %.3f (median of the rounds' ratios %s), %.3f of plain"
                  % (res["checked_vs_recorded"], ", ".join("%.3f" % x for x in check_ratios), res["checked_vs_plain"]))
            print("one check (rank 0 asks its watch child, every rank all-reduces the flag): %.1f ms, every %d "
                  "steps; %d of the %d timed steps hold one" % (res["check_ms"], args.check_every,
                                                               checks_in_window(args), args.steps))
        else:
            print("on_finding not measured: no ranksight-cli (--cli, $RANKSIGHT_CLI or PATH)")
        c = res["statistics_alone_ms"]
        print("its statistics alone (%s kernel%s), one thread, caches cold: local %.1f ms, synced %.1f ms, where "
              "one read of the %.1f MiB gradient takes %.1f ms (%.1f and %.1f reads' worth)"
              % (c["kernel"], ", %s bodies" % c["bodies"] if c["kernel"] == "native" else "", c["local_ms"], c["synced_ms"], c["gradient_mib"], c["one_read_ms"],
                 c["local_ms"] / c["one_read_ms"], c["synced_ms"] / c["one_read_ms"]))
        if "torch_local_ms" in c:
            print("the same statistics as torch passes: local %.1f ms, synced %.1f ms (%.1f and %.1f reads' worth)"
                  % (c["torch_local_ms"], c["torch_synced_ms"], c["torch_local_ms"] / c["one_read_ms"],
                     c["torch_synced_ms"] / c["one_read_ms"]))


if __name__ == "__main__":
    main()
