#!/usr/bin/python3
"""Held-out accuracy on real images: `ranksight-cli train --data fashion-mnist` on 4 emulated cards, each model
trained for the given epochs with the engine's defaults (SGD with momentum, its learning-rate schedule, O0),
then evaluated on the whole Fashion-MNIST test split (10,000 images; eval_samples=10000, the one setting
changed: the default evaluates 512 images). Published results on the same data, for comparison (trained for
tens of epochs): small CNNs about 91-93%, ResNet-18 about 94-95%.

    bench/accuracy_bench.py --cli build/release/app/ranksight-cli [--runs smallcnn:5,resnet18:1]
        [--write docs/accuracy.md [--note TEXT]]
"""

import argparse
import os
import subprocess
import tempfile
import time

import h5py

from page_header import measured

BASELINE = {"smallcnn": "91-93% (small CNNs)", "resnet18": "94-95%", "mlp": "about 88% (MLPs)"}


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def run(cli, model, epochs, workdir):
    out = os.path.join(workdir, "%s-%d.h5" % (model, epochs))
    t0 = time.monotonic()
    p = subprocess.run([cli, "train", "--model", model, "--ranks", "4", "--data", "fashion-mnist", "--epochs",
                        str(epochs), "--set", "eval_samples=10000", "--quiet", "--force", "--out", out],
                       capture_output=True, text=True)
    minutes = (time.monotonic() - t0) / 60
    if p.returncode != 0:
        raise SystemExit("train failed: " + p.stderr)
    with h5py.File(out, "r") as f:
        acc = f["/eval/accuracy"][-1]
        steps = f["/steps/step"].shape[0]
        batch = int(f.attrs["batch_per_rank"])
    os.remove(out)
    return dict(model=model, epochs=epochs, steps=steps, batch=batch, acc=float(acc.mean()),
                spread=float(acc.max() - acc.min()), minutes=minutes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--runs", default="smallcnn:5,resnet18:1", help="model:epochs,...")
    ap.add_argument("--write")
    ap.add_argument("--note", help="said in the page's header, e.g. what else ran on the machine")
    a = ap.parse_args()
    load_start = load()
    header = "| model | epochs | steps | batch per card | held-out accuracy (10,000 test images) | published | minutes |"
    lines = [header, "|---|---:|---:|---:|---:|---|---:|"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory() as work:
        for spec in a.runs.split(","):
            model, epochs = spec.split(":")
            r = run(a.cli, model, int(epochs), work)
            line = "| %s | %d | %d | %d | %.1f%% | %s | %.0f |" % (
                r["model"], r["epochs"], r["steps"], r["batch"], 100 * r["acc"], BASELINE.get(model, "?"),
                r["minutes"])
            lines.append(line)
            print(line, flush=True)
    if a.write:
        page = ["# Accuracy on real images", "",
                measured("bench/accuracy_bench.py --runs %s --write %s" % (a.runs, a.write))
                + (" " + a.note if a.note else "") + " Load average (1 min) at the start %s, at the end %s." % (
                    load_start, load()), "",
                "`ranksight-cli train --model M --ranks 4 --data fashion-mnist --epochs E --set eval_samples=10000`: "
                "Fashion-MNIST from Debian's `dataset-fashion-mnist`, 4 emulated cards, the engine's defaults "
                "otherwise; every card evaluates the whole test split at the end (the cards' weights are equal, so "
                "are their accuracies). The published results it is compared with trained for tens of epochs.", ""] + lines
        with open(a.write, "w") as f:
            f.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
