#!/usr/bin/python3
"""The peer RankSight is measured against: PyTorch DDP with gloo, one process per rank, on the same CIFAR
ResNet variants (3x3 stem, no max-pool) and the same per-rank batch. Run side by side with
`ranksight-cli bench` on the same machine:

    /usr/bin/python3 bench/ddp_peer.py --model resnet18 --ranks 4 --batch 8 --steps 6 --warmup 2

Needs Debian's python3-torch (the same LibTorch 1.13). Prints img/s over the steps after warm-up, as JSON.
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class Basic(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(planes)
        self.c2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or cin != planes:
            self.down = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.b1 = nn.BatchNorm2d(planes)
        self.c2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(planes)
        self.c3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.b3 = nn.BatchNorm2d(planes * 4)
        self.down = None
        if stride != 1 or cin != planes * 4:
            self.down = nn.Sequential(nn.Conv2d(cin, planes * 4, 1, stride, bias=False), nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = F.relu(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet(nn.Module):
    def __init__(self, block, layers):
        super().__init__()
        self.stem = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for stage, (planes, n) in enumerate(zip([64, 128, 256, 512], layers)):
            for b in range(n):
                blocks.append(block(cin, planes, 2 if stage > 0 and b == 0 else 1))
                cin = planes * block.expansion
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.stem(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make(model):
    if model == "smallcnn":  # not the same layers as RankSight's SmallCNN: the peer is for the ResNets
        raise SystemExit("the DDP peer runs resnet18 and resnet50 only")
    if model == "resnet18":
        return ResNet(Basic, [2, 2, 2, 2])
    if model == "resnet50":
        return ResNet(Bottleneck, [3, 4, 6, 3])
    raise SystemExit(f"unknown model {model}")


def worker(rank, args, result):
    torch.set_num_threads(args.threads)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(1)
    model = nn.parallel.DistributedDataParallel(make(args.model))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(args.batch, 3, 32, 32)
    y = torch.randint(0, 10, (args.batch,))
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            dist.barrier()
            start = time.time()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    dist.barrier()
    if rank == 0:
        result.put(args.steps * args.batch * args.ranks / (time.time() - start))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet18")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per process")
    p.add_argument("--port", type=int, default=29517)
    args = p.parse_args()
    make(args.model)  # fail here, not in the workers
    ctx = mp.get_context("spawn")
    result = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, result)) for r in range(args.ranks)]
    for proc in procs:
        proc.start()
    img_s = None
    while img_s is None:
        try:
            img_s = result.get(timeout=1)
        except Exception:  # queue.Empty: give up when a worker died instead of waiting forever
            if any(proc.exitcode not in (None, 0) for proc in procs):
                for proc in procs:
                    proc.terminate()
                raise SystemExit("a DDP worker failed")
    for proc in procs:
        proc.join()
    print(json.dumps({"peer": "pytorch-ddp-gloo", "model": args.model, "ranks": args.ranks,
                      "batch_per_rank": args.batch, "threads_per_process": args.threads, "img_s": img_s}))


if __name__ == "__main__":
    main()
