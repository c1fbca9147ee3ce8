"""A real PyTorch DDP job that records itself with ranksight.ddp.Recorder: N gloo processes on 127.0.0.1
training a small CNN on a built-in learnable CIFAR-10-shaped set (no download).

    PYTHONPATH=python /usr/bin/python3 examples/pytorch_ddp.py --out runs/ddp.h5 [--ranks 4] [--steps 60]
        [--mistake none|not-synced|checkpoint-one-rank|same-batches|sum-hook|eval-mode|slow-rank|sdc-after|
                   own-lr]
        [--no-sample-ids] [--comm-hook allreduce|powersgd|fp16]

The mistakes are the real ones DDP users make: a parameter left out of DDP's buckets, a checkpoint loaded
on one rank after wrapping, every rank reading the same batches (no DistributedSampler), a hook that sums
instead of averaging, one rank left in eval mode, a slow rank, one rank's own learning rate (a per-rank
schedule: the last rank's optimizer steps 1.5x as far); and what a faulty card does: one bit of the
all-reduced gradient flipped on the last rank at step 8 (silent data corruption after the all-reduce).
--no-sample-ids keeps the sample ids from the recorder, as a job that does not pass them. --comm-hook picks
DDP's own communication hook (torch.distributed.algorithms.ddp_comm_hooks): PowerSGD (rank-1 approximation
after 2 exact steps) and fp16 compression are lossy, and not mistakes.
"""

import argparse
import os
import shlex
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from ranksight.ddp import Recorder  # noqa: E402

MISTAKES = ["none", "not-synced", "checkpoint-one-rank", "same-batches", "sum-hook", "eval-mode", "slow-rank",
            "sdc-after", "own-lr"]
SDC_STEP = 8


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 8 * 8, 10)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(self.drop(torch.flatten(x, 1)))


def dataset(n, seed=1234):
    """A learnable CIFAR-10-shaped set: each class is a fixed random pattern plus noise."""
    g = torch.Generator().manual_seed(seed)
    protos = torch.randn(10, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = protos[labels] * 0.5 + torch.randn(n, 3, 32, 32, generator=g)
    return images, labels


def sum_hook(state, bucket):
    """The mistake: all-reduce without dividing by the world size (gradients summed, lr N times too high)."""
    return dist.all_reduce(bucket.buffer(), async_op=True).get_future().then(lambda f: f.value()[0])


def bitflip_hook(rank, world):
    """DDP's mean all-reduce, then on the last rank at step SDC_STEP one bit of the first bucket's result
    flipped: a card that corrupts what the all-reduce delivered."""
    calls = {"step": 0}

    def hook(state, bucket):
        fut = default_hooks.allreduce_hook(state, bucket)
        step = calls["step"]
        if bucket.is_last():
            calls["step"] += 1
        if rank != world - 1 or step != SDC_STEP or bucket.index() != 0:
            return fut

        def flip(f):
            t = f.value()[0] if isinstance(f.value(), (list, tuple)) else f.value()
            t.view(-1)[:1].view(torch.int32).bitwise_xor_(1 << 20)
            return t

        return fut.then(flip)

    return hook


def worker(rank, args, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(args.seed)
    model = SmallCNN()
    if args.mistake == "not-synced":
        # A parameter DDP is told to ignore: it never reaches a bucket, each rank keeps its own gradient.
        DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, ["fc.bias"])
    ddp = DistributedDataParallel(model)
    if args.mistake == "checkpoint-one-rank" and rank == args.ranks - 1:
        with torch.no_grad():  # a checkpoint loaded on one rank after wrapping: DDP broadcast only at init
            for p in model.parameters():
                p.add_(0.01 * torch.randn_like(p))
    hook = {"sum-hook": sum_hook, "sdc-after": bitflip_hook(rank, args.ranks)}.get(args.mistake)
    state = None
    if hook is None and args.comm_hook == "powersgd":
        state = powerSGD.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2)
        hook = powerSGD.powerSGD_hook
    elif hook is None and args.comm_hook == "fp16":
        hook = default_hooks.fp16_compress_hook
    rec = Recorder(ddp, args.out, hook=hook, state=state, batch_size=0 if args.no_sample_ids else args.batch,
                   model_name="smallcnn", planned_steps=args.steps,
                   config={"mistake": args.mistake, "ranks": args.ranks, "batch": args.batch, "lr": args.lr})
    lr = args.lr * (1.5 if args.mistake == "own-lr" and rank == args.ranks - 1 else 1.0)
    opt = torch.optim.SGD(ddp.parameters(), lr=lr, momentum=0.9)
    images, labels = dataset(args.ranks * args.batch * 64)
    n = images.shape[0]
    ddp.train()
    if args.mistake == "eval-mode" and rank == args.ranks - 1:
        ddp.eval()
    for step in range(args.steps):
        if args.mistake == "same-batches":
            ids = torch.arange(args.batch) + (step * args.batch) % (n - args.batch)
        else:  # DistributedSampler semantics: rank-strided
            base = (step * args.batch * args.ranks) % (n - args.batch * args.ranks)
            ids = base + rank + args.ranks * torch.arange(args.batch)
        x, y = images[ids], labels[ids]
        if args.mistake == "slow-rank" and rank == args.ranks - 1:
            time.sleep(0.05)
        out = ddp(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        acc = float((out.argmax(1) == y).float().mean())
        rec.step(loss=loss.item(), accuracy=acc, sample_ids=None if args.no_sample_ids else ids.tolist(), lr=args.lr)
    rec.close("completed")  # collective: ends in a barrier
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mistake", choices=MISTAKES, default="none")
    ap.add_argument("--no-sample-ids", action="store_true", help="do not give the recorder the sample ids")
    ap.add_argument("--comm-hook", choices=["allreduce", "powersgd", "fp16"], default="allreduce",
                    help="DDP's communication hook (PowerSGD and fp16 are lossy)")
    args = ap.parse_args()
    # Forked, not spawned: each child inherits the imported torch instead of importing it again (about 1.5 s of
    # CPU per rank). Safe here because the parent has run no torch op, so no thread pool exists to be forked.
    mp.start_processes(worker, args=(args, free_port()), nprocs=args.ranks, join=True, start_method="fork")
    # The ranks wrote the file and said nothing (a rank's print would come N times): one line saying what is
    # there and how to look at it.
    mistake = "" if args.mistake == "none" else ", mistake %s" % args.mistake
    shown = shlex.quote(args.out)
    print("wrote %s: %d steps, %d ranks (gloo%s); open it with ranksight %s or ranksight-cli diagnose %s"
          % (args.out, args.steps, args.ranks, mistake, shown, shown), flush=True)


if __name__ == "__main__":
    main()
