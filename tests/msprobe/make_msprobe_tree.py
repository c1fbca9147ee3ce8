"""Writes a tree the way msprobe's training-state monitor does, for the tests of `ranksight-cli import-msprobe`
(no Ascend card or msprobe install here). Two layouts, as msprobe writes them.

Monitor V1 (TrainerMon, the default here; msprobe's debug/accuracy_tools/msprobe: pytorch/monitor/module_hook.py,
data_writers.py, core/monitor/utils.py), under OUT_DIR/monitor_output:

- one folder per rank, `<%b%d_%H-%M-%S>-rank<N>-<8 hex>`;
- `<prefix>_<start>-<end>.csv` per `step_count_per_record` steps counted from step 0, both ends inclusive;
  prefixes grad_unreduced, grad_reduced, param_origin, param_updated (and actv, which the import ignores);
- header `vpp_stage,name,step[,micro_step],<ops>,shape,dtype` (shape and dtype always appended), or the older
  `param_name,step,<ops>`; the name is squashed (`layers.0.weight`), its `0:` vpp prefix in vpp_stage;
- values rounded to 6 decimals (pandas .round(6)), missing ones `nan`; norm is the L2 norm, nans a count,
  zeros the share of |x| < 1e-8, shape printed as a list ("[16, 8]", quoted since it holds a comma);
- with --anomalies, the alerts of rules with `dump: true` in anomaly_detected/rank<R>/anomaly.json (msprobe's
  core/monitor/anomaly_processor.py: one object keyed "<tag_name>_step_<s>_call_<c>", json.dump indent 1).

Monitor V2 (TrainerMonitorV2, --layout v2; msprobe's python/msprobe/core/monitor_v2: trainer.py, writer.py,
weight_grad.py and docs/en/monitor_v2_instruct.md), under OUT_DIR/monitor_v2_out:

- one folder per rank, `rank_<N>`;
- `<monitor>_step<start>-<end>.csv` per `step_count_per_record` steps, one file per monitor: weight_grad (rows
  of scope unreduced, written during the backward in its order, then reduced, before optimizer.step), param
  (param_origin, param_updated), optimizer (`<name>.exp_avg`, scope exp_avg; `.exp_avg_sq`), module
  (`<module>.output.0`, scope forward) and cc (scope comm), the last three not imported;
- header `vpp_stage,step,module_name,scope[,micro_step],min,max,mean,norm,nans` (micro_step on weight_grad:
  the micro-batch count, or each micro batch's index with monitor_mbs_grad); no shape or dtype column;
- values as Python prints a float32 tensor's item (`float(x)`: full precision, not rounded), nans a count.

The gradients are real arrays (numpy), so every statistic is consistent with every other: the reduced
gradient is the mean of the ranks' local gradients (DDP / MindSpore gradients_mean), unless a mistake says
otherwise.

    /usr/bin/python3 tests/msprobe/make_msprobe_tree.py OUT_DIR [--ranks 4] [--steps 12]
        [--mistake none|param-not-synced|grad-sum|shard-overlap|init-mismatch] [--dp-group] [--legacy-header]
        [--micro-steps N] [--layout v1|v2] [--anomalies]
        [--broken bad-number|missing-column|mixed-steps|two-folders|ragged-row|both-layouts|missing-rank|
                  bad-anomaly]
"""

import argparse
import csv
import json
import os
import shutil

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


V2_OPS = ["min", "max", "mean", "norm", "nans"]


def stats32(g):
    """Monitor V2's statistics as torch computes them on a float32 tensor (norm and mean in float32)."""
    return {"min": g.min(), "max": g.max(), "mean": g.mean(dtype=np.float32), "norm": np.linalg.norm(g),
            "nans": np.float32(np.isnan(g).sum())}


def fmt32(v):
    v = float(np.float32(v))
    return "nan" if v != v else repr(v)


def write_v2(path, rows, micro):
    """rows: (name, step, scope, micro_step, stats); appended the way CSVWriterV2 does (header once)."""
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["vpp_stage", "step", "module_name", "scope"] + (["micro_step"] if micro else []) + V2_OPS)
        for name, step, scope, mstep, st in rows:
            w.writerow([0, step, name, scope] + ([mstep] if micro else []) + [fmt32(st[o]) for o in V2_OPS])


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
    ap.add_argument("--dp-group", action="store_true", help="only rank 0 writes reduced gradients (V1)")
    ap.add_argument("--legacy-header", action="store_true")
    ap.add_argument("--micro-steps", type=int, default=0)
    ap.add_argument("--layout", default="v1", choices=["v1", "v2"])
    ap.add_argument("--broken", default="", choices=["", "bad-number", "missing-column", "mixed-steps",
                                                     "two-folders", "ragged-row", "both-layouts", "missing-rank",
                                                     "bad-anomaly"])
    ap.add_argument("--anomalies", action="store_true", help="V1 alerts in anomaly_detected/")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    v2 = a.layout == "v2"
    rng = np.random.default_rng(a.seed)
    root = os.path.join(a.out, "monitor_v2_out" if v2 else "monitor_output")
    folders = []
    for r in range(a.ranks):
        folders.append(os.path.join(root, "rank_%d" % r if v2 else
                                    "Dec01_12-00-%02d-rank%d-%08x" % (r, r, 0x1a2b3c00 + r)))
        os.makedirs(folders[-1])
    if a.broken == "two-folders":
        os.makedirs(os.path.join(root, "Dec01_13-00-00-rank1-deadbeef"))
        with open(os.path.join(root, "Dec01_13-00-00-rank1-deadbeef", "grad_unreduced_0-4.csv"), "w") as f:
            f.write("vpp_stage,name,step,norm\n0,layers.0.attention.dense.bias,0,1.0\n")
    if a.broken == "both-layouts":
        os.makedirs(os.path.join(root, "Dec01_12-00-00-rank0-1a2b3c00" if v2 else "rank_0"))
    init = [rng.standard_normal(shape).astype(np.float32) for _, shape in PARAMS]
    # One replica per rank; init-mismatch: the last rank started from its own weights (no broadcast).
    weights = [[w.copy() for w in init] for _ in range(a.ranks)]
    if a.mistake == "init-mismatch":
        weights[-1] = [rng.standard_normal(w.shape).astype(np.float32) for w in init]
    for step in range(a.steps):
        lo = step // a.per_record * a.per_record
        suffix = "%s%d-%d.csv" % ("step" if v2 else "", lo, lo + a.per_record - 1)
        # Local gradients per rank: each rank's own batch, or one batch for all (shard-overlap).
        local = [[rng.standard_normal(shape).astype(np.float32) * (0.1 + 0.02 * p) for p, (_, shape) in enumerate(PARAMS)]
                 for _ in range(a.ranks)]
        if a.mistake == "shard-overlap":
            local = [local[0]] * a.ranks
        mean = [np.mean([local[r][p] for r in range(a.ranks)], axis=0).astype(np.float32) for p in range(len(PARAMS))]
        micro = list(range(a.micro_steps)) if a.micro_steps else [0]
        for r in range(a.ranks):
            unreduced, reduced, origin, updated = [], [], [], []  # (name, micro index, array, shape)
            for m in micro:  # the backward of each micro batch, last layer first
                for p in reversed(range(len(PARAMS))):
                    # earlier micro steps carry a partial gradient
                    unreduced.append((PARAMS[p][0], m, local[r][p] * (m + 1) / len(micro), PARAMS[p][1]))
            for p, (name, shape) in enumerate(PARAMS):
                synced = mean[p]
                if a.mistake == "grad-sum":
                    synced = synced * a.ranks
                if a.mistake == "param-not-synced" and p == 2:
                    synced = local[r][p]  # never all-reduced: each rank keeps its own
                reduced.append((name, 0, synced, shape))
                origin.append((name, 0, weights[r][p], shape))
                updated.append((name, 0, weights[r][p] - 0.01 * synced, shape))
            if v2:
                write_v2_rank(folders[r], suffix, step, unreduced, reduced, origin, updated, a.micro_steps)
                continue
            v1 = lambda rows: [(n, step, m, stats(g), shape) for n, m, g, shape in rows]  # noqa: E731
            write(os.path.join(folders[r], "grad_unreduced_" + suffix), v1(unreduced), a.legacy_header,
                  a.micro_steps > 0)
            if not a.dp_group or r == 0:
                write(os.path.join(folders[r], "grad_reduced_" + suffix), v1(reduced), a.legacy_header, False)
            write(os.path.join(folders[r], "param_origin_" + suffix), v1(origin), a.legacy_header, False)
            write(os.path.join(folders[r], "param_updated_" + suffix), v1(updated), a.legacy_header, False)
            with open(os.path.join(folders[r], "actv_" + suffix), "a") as f:
                f.write("vpp_stage,name,step,micro_step,norm\n" if step == lo else "")
                f.write("0,layers.0.mlp.input,%d,0,1.5\n" % step)
        weights = [[w[p] - 0.01 * mean[p] for p in range(len(PARAMS))] for w in weights]

    bad = os.path.join(folders[min(2, a.ranks - 1)], "weight_grad_step5-9.csv" if v2 else "grad_unreduced_5-9.csv")
    if a.broken == "bad-number":
        lines = open(bad).read().splitlines()
        parts = lines[3].split(",")
        parts[5 if v2 else 3] = "1.2.3"
        lines[3] = ",".join(parts)
        open(bad, "w").write("\n".join(lines) + "\n")
    elif a.broken == "missing-column":
        lines = open(bad).read().splitlines()
        lines[0] = lines[0].replace("step", "stp", 1)
        open(bad, "w").write("\n".join(lines) + "\n")
    elif a.broken == "mixed-steps":
        with open(bad, "a") as f:
            f.write("0,11,layers.0.attention.dense.bias,unreduced,1,-0.1,0.1,0.0,0.5,0.0\n" if v2 else
                    "0,layers.0.attention.dense.bias,11,0.5,-0.1,0.1,0.0,0.0,0.0,[8],torch.float32\n")
    elif a.broken == "ragged-row":
        with open(bad, "a") as f:
            f.write("0,6,layers.0.attention.dense.bias,unreduced\n" if v2 else "0,layers.0.attention.dense.bias,6,0.5\n")
    elif a.broken == "missing-rank":
        shutil.rmtree(folders[1])
    if a.anomalies or a.broken == "bad-anomaly":
        write_anomalies(root, a.ranks, a.broken == "bad-anomaly")
    print(root)


def write_anomalies(root, ranks, broken):
    """Two alerts at step 7, on ranks 1 and 3 (AnomalyNan, AnomalyTurbulence), an empty file for the others;
    broken: rank 2's file cut short."""
    for r in range(ranks):
        entries = {}
        if r in (1, 3):
            tag = "0:layers.0.attention.dense.bias/rank%d/post_grad" % r
            rule, value = ("AnomalyNan", "nan") if r == 1 else ("AnomalyTurbulence", "3.52")
            entries["%s_step_7_call_%d" % (tag, 40 + r)] = {
                "rank": r, "step": 7, "micro_step": 0, "pp_stage": 0, "vpp_stage": 0, "call_id": 40 + r,
                "tag_name": tag,
                "message": "Rule %s reports anomaly signal in ('%s', 'norm') at step 7, current value %s, "
                           "history mean 0.4312." % (rule, tag, value),
                "group_mates": list(range(ranks))}
        folder = os.path.join(root, "anomaly_detected", "rank%d" % r)
        os.makedirs(folder)
        text = json.dumps(entries, indent=1)
        with open(os.path.join(folder, "anomaly.json"), "w") as f:
            f.write(text[:len(text) // 2] if broken and r == 2 else text)


def write_v2_rank(folder, suffix, step, unreduced, reduced, origin, updated, micro_steps):
    """One step of one rank in Monitor V2's files: weight_grad (micro_step: each micro batch's index, 1-based,
    with monitor_mbs_grad; else the micro-batch count), param, and the monitors the import does not read."""
    count = max(micro_steps, 1)
    wg = [(n, step, "unreduced", m + 1 if micro_steps else count, stats32(g)) for n, m, g, _ in unreduced]
    wg += [(n, step, "reduced", count, stats32(g)) for n, _, g, _ in reduced]
    write_v2(os.path.join(folder, "weight_grad_" + suffix), wg, True)
    write_v2(os.path.join(folder, "param_" + suffix),
             [(n, step, "param_origin", 0, stats32(g)) for n, _, g, _ in origin] +
             [(n, step, "param_updated", 0, stats32(g)) for n, _, g, _ in updated], False)
    moment = [(n + "." + k, step, k, 0, stats32(np.abs(g) * (1.0 if k == "exp_avg" else g)))
              for n, _, g, _ in reduced for k in ("exp_avg", "exp_avg_sq")]
    write_v2(os.path.join(folder, "optimizer_" + suffix), moment, False)
    write_v2(os.path.join(folder, "module_" + suffix),
             [("layers.0.mlp.output.0", step, "forward", 0, stats32(updated[3][2]))], False)
    write_v2(os.path.join(folder, "cc_" + suffix),
             [("all_reduce.0.train.py[42]", step, "comm", 0, stats32(reduced[0][2]))], False)


if __name__ == "__main__":
    main()
