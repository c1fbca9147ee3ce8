"""Writes a monitor_output/ tree the way msprobe's training-state monitor (TrainerMon) does, for the tests of
`ranksight-cli import-msprobe` (no Ascend card or msprobe install here). The layout follows msprobe's source
(debug/accuracy_tools/msprobe: pytorch/monitor/module_hook.py, data_writers.py, core/monitor/utils.py):

- one folder per rank, `<%b%d_%H-%M-%S>-rank<N>-<8 hex>`;
- `<prefix>_<start>-<end>.csv` per `step_count_per_record` steps counted from step 0, both ends inclusive;
  prefixes grad_unreduced, grad_reduced, param_origin, param_updated (and actv, which the import ignores);
- header `vpp_stage,name,step[,micro_step],<ops>,shape,dtype` (shape and dtype always appended), or the older
  `param_name,step,<ops>`; the name is squashed (`layers.0.weight`), its `0:` vpp prefix in vpp_stage;
- values rounded to 6 decimals (pandas .round(6)), missing ones `nan`; norm is the L2 norm, nans a count,
  zeros the share of |x| < 1e-8, shape printed as a list ("[16, 8]", quoted since it holds a comma).

The gradients are real arrays (numpy), so every statistic is consistent with every other: the reduced
gradient is the mean of the ranks' local gradients (DDP / MindSpore gradients_mean), unless a mistake says
otherwise.

    /usr/bin/python3 tests/msprobe/make_msprobe_tree.py OUT_DIR [--ranks 4] [--steps 12]
        [--mistake none|param-not-synced|grad-sum|shard-overlap|init-mismatch] [--dp-group] [--legacy-header]
        [--micro-steps N] [--broken bad-number|missing-column|mixed-steps|two-folders|ragged-row]
"""

import argparse
import csv
import os

import numpy as np

PARAMS = [("embedding.word_embeddings.weight", (32, 8)), ("layers.0.attention.dense.weight", (8, 8)),
          ("layers.0.attention.dense.bias", (8,)), ("layers.0.mlp.dense_h_to_4h.weight", (16, 8)),
          ("layers.1.mlp.dense_4h_to_h.weight", (8, 16)), ("final_layernorm.weight", (8,))]
OPS = ["norm", "min", "max", "zeros", "nans", "mean"]


def fmt(v):
    v = round(float(v), 6)
    return "nan" if v != v else repr(v)


def stats(g):
    return {"norm": np.linalg.norm(g.astype(np.float64)), "min": g.min(), "max": g.max(),
            "zeros": float(np.mean(np.abs(g) < 1e-8)), "nans": float(np.isnan(g).sum()), "mean": g.astype(np.float64).mean()}


def write(path, rows, legacy, micro):
    header = (["param_name", "step"] if legacy else ["vpp_stage", "name", "step"] + (["micro_step"] if micro else []))
    header += OPS + ([] if legacy else ["shape", "dtype"])
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        for name, step, mstep, st, shape in rows:
            row = [name, step] if legacy else [0, name, step] + ([mstep] if micro else [])
            row += [fmt(st[o]) for o in OPS]
            if not legacy:
                row += [str(list(shape)), "torch.float32"]
            w.writerow(row)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--per-record", type=int, default=5)
    ap.add_argument("--mistake", default="none",
                    choices=["none", "param-not-synced", "grad-sum", "shard-overlap", "init-mismatch"])
    ap.add_argument("--dp-group", action="store_true", help="only rank 0 writes reduced gradients")
    ap.add_argument("--legacy-header", action="store_true")
    ap.add_argument("--micro-steps", type=int, default=0)
    ap.add_argument("--broken", default="", choices=["", "bad-number", "missing-column", "mixed-steps",
                                                     "two-folders", "ragged-row"])
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    root = os.path.join(a.out, "monitor_output")
    folders = []
    for r in range(a.ranks):
        folders.append(os.path.join(root, "Dec01_12-00-%02d-rank%d-%08x" % (r, r, 0x1a2b3c00 + r)))
        os.makedirs(folders[-1])
    if a.broken == "two-folders":
        os.makedirs(os.path.join(root, "Dec01_13-00-00-rank1-deadbeef"))
        with open(os.path.join(root, "Dec01_13-00-00-rank1-deadbeef", "grad_unreduced_0-4.csv"), "w") as f:
            f.write("vpp_stage,name,step,norm\n0,layers.0.attention.dense.bias,0,1.0\n")
    init = [rng.standard_normal(shape).astype(np.float32) for _, shape in PARAMS]
    # One replica per rank; init-mismatch: the last rank started from its own weights (no broadcast).
    weights = [[w.copy() for w in init] for _ in range(a.ranks)]
    if a.mistake == "init-mismatch":
        weights[-1] = [rng.standard_normal(w.shape).astype(np.float32) for w in init]
    for step in range(a.steps):
        lo = step // a.per_record * a.per_record
        suffix = "%d-%d.csv" % (lo, lo + a.per_record - 1)
        # Local gradients per rank: each rank's own batch, or one batch for all (shard-overlap).
        local = [[rng.standard_normal(shape).astype(np.float32) * (0.1 + 0.02 * p) for p, (_, shape) in enumerate(PARAMS)]
                 for _ in range(a.ranks)]
        if a.mistake == "shard-overlap":
            local = [local[0]] * a.ranks
        mean = [np.mean([local[r][p] for r in range(a.ranks)], axis=0).astype(np.float32) for p in range(len(PARAMS))]
        for r in range(a.ranks):
            unreduced, reduced, origin, updated = [], [], [], []
            for p, (name, shape) in enumerate(PARAMS):
                micro = list(range(a.micro_steps)) if a.micro_steps else [0]
                for m in micro:  # earlier micro steps carry a partial gradient
                    g = local[r][p] * (m + 1) / len(micro)
                    unreduced.append((name, step, m, stats(g), shape))
                synced = mean[p]
                if a.mistake == "grad-sum":
                    synced = synced * a.ranks
                if a.mistake == "param-not-synced" and p == 2:
                    synced = local[r][p]  # never all-reduced: each rank keeps its own
                reduced.append((name, step, 0, stats(synced), shape))
                origin.append((name, step, 0, stats(weights[r][p]), shape))
                updated.append((name, step, 0, stats(weights[r][p] - 0.01 * synced), shape))
            write(os.path.join(folders[r], "grad_unreduced_" + suffix), unreduced, a.legacy_header, a.micro_steps > 0)
            if not a.dp_group or r == 0:
                write(os.path.join(folders[r], "grad_reduced_" + suffix), reduced, a.legacy_header, False)
            write(os.path.join(folders[r], "param_origin_" + suffix), origin, a.legacy_header, False)
            write(os.path.join(folders[r], "param_updated_" + suffix), updated, a.legacy_header, False)
            with open(os.path.join(folders[r], "actv_" + suffix), "a") as f:
                f.write("vpp_stage,name,step,micro_step,norm\n" if step == lo else "")
                f.write("0,layers.0.mlp.input,%d,0,1.5\n" % step)
        weights = [[w[p] - 0.01 * mean[p] for p in range(len(PARAMS))] for w in weights]

    bad = os.path.join(folders[min(2, a.ranks - 1)], "grad_unreduced_5-9.csv")
    if a.broken == "bad-number":
        lines = open(bad).read().splitlines()
        parts = lines[3].split(",")
        parts[3] = "1.2.3"
        lines[3] = ",".join(parts)
        open(bad, "w").write("\n".join(lines) + "\n")
    elif a.broken == "missing-column":
        lines = open(bad).read().splitlines()
        lines[0] = lines[0].replace("step", "stp", 1)
        open(bad, "w").write("\n".join(lines) + "\n")
    elif a.broken == "mixed-steps":
        with open(bad, "a") as f:
            f.write("0,layers.0.attention.dense.bias,11,0.5,-0.1,0.1,0.0,0.0,0.0,[8],torch.float32\n")
    elif a.broken == "ragged-row":
        with open(bad, "a") as f:
            f.write("0,layers.0.attention.dense.bias,6,0.5\n")
    print(root)


if __name__ == "__main__":
    main()
