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

Every version's layout, from msprobe's own source (debug/accuracy_tools/msprobe in Ascend/mstt before the move,
then Ascend/msprobe) and its tests:

- --version 1.2.0 (to 2025-01): header `vpp_stage,param_name,step,<ops>`, activations
  `vpp_stage,module_name,step,input.<op>...,output.<op>...`, a nan written as an empty field (pandas' default),
  weights before the update in `param_<a>-<b>.csv`, a process that was not distributed in `<time>-<8 hex>`
  (--single-process);
- --version 1.2.2 (2025-02 to 1.3.0): header `vpp_stage,name,step,<ops>`, nan written `nan` (fillna),
  still `param_<a>-<b>.csv`;
- --version 8.1 (the default, msprobe >= 8.1): `shape,dtype` appended (a multi-dimensional shape quoted,
  "[16, 8]", a 1-D one not, [8]), param_origin and param_updated, exp_avg and exp_avg_sq files (the
  optimizer has no moments before its first step: no step 0 rows), L2 hook files with --l2-hooks;
- --ops: the user's `ops`, in the user's order (the columns follow it);
- --part-rows N: msprobe's write_df_to_csv splits a write of more than 1,000,000 rows into
  `<name>_part_<k>.csv` files written without a header, the header staying alone in `<name>.csv`; N stands for
  that limit so a small tree shows it;
- the root module's activations are named by their suffix alone (`.input`, `.output.0`).

Monitor V2 as CSVWriterV2 writes it (csv.DictWriter: CRLF line ends, a missing field empty): `vpp_stage` -1 for
a single model's rows (--vpp-list: 0 and names `0:<name>`), cc rows without one, weight_grad rows always with
micro_step, a statistic some row lacked written nan in every row (--nan-column OP). --only-ranks R,... writes
the folders of those ranks only (the monitor's `rank` setting, V1's `module_ranks`).

Alerts (V1): --anomalies; --call-id-unknown writes call_id -1; --analyse also writes msprobe's
anomaly_analyse.json into anomaly_detected/; --alerts-only leaves anomaly_detected/ alone.

The gradients are real arrays (numpy), so every statistic is consistent with every other: the reduced
gradient is the mean of the ranks' local gradients (DDP / MindSpore gradients_mean), unless a mistake says
otherwise.

    /usr/bin/python3 tests/msprobe/make_msprobe_tree.py OUT_DIR [--ranks 4] [--steps 12]
        [--mistake none|param-not-synced|grad-sum|shard-overlap|init-mismatch] [--dp-group] [--legacy-header]
        [--micro-steps N] [--layout v1|v2] [--anomalies] [--version 1.2.0|1.2.2|8.1] [--ops norm,min,...]
        [--single-process] [--part-rows N] [--l2-hooks] [--nan-grad] [--tiny-grad] [--only-ranks 3]
        [--vpp-list] [--nan-column OP] [--call-id-unknown] [--analyse] [--alerts-only]
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


NAN_TEXT = ["nan"]  # how a nan is written: "nan" (msprobe >= 1.2.2) or "" (before)


def fmt(v):
    v = round(float(v), 6)
    return NAN_TEXT[0] if v != v else repr(v)


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


V2 = {"vpp_list": False, "nan_column": ""}


def write_v2(path, rows, micro, vpp=True):
    """rows: (name, step, scope, micro_step, stats); appended the way CSVWriterV2 does: DictWriter (CRLF), the
    header once, fields vpp_stage, step, then the rows' keys in order; a row without a key (cc: vpp_stage)
    leaves it empty; a statistic that a row lacked is nan in every row of the write."""
    fields = ["vpp_stage", "step", "module_name", "scope"] + (["micro_step"] if micro else []) + V2_OPS
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        if new:
            w.writeheader()
        for name, step, scope, mstep, st in rows:
            row = {"step": step, "module_name": ("0:" + name) if V2["vpp_list"] and vpp else name, "scope": scope}
            if vpp:
                row["vpp_stage"] = 0 if V2["vpp_list"] else -1
            if micro:
                row["micro_step"] = mstep
            for o in V2_OPS:
                row[o] = "nan" if o == V2["nan_column"] else fmt32(st[o])
            w.writerow(row)


def v1_header(version, legacy, micro, ops):
    if legacy:
        return ["param_name", "step"] + ops
    if version == "1.2.0":
        return ["vpp_stage", "param_name", "step"] + ops
    header = ["vpp_stage", "name", "step"] + (["micro_step"] if micro else []) + ops
    return header + (["shape", "dtype"] if version == "8.1" else [])


PART_ROWS = [0]  # > 0: split each write at this many rows, as msprobe's write_df_to_csv does at 1,000,000


def write_rows(path, header, rows):
    """One write of CSVWriterWithAD.write_csv: the header when the file is new (alone), then the rows, appended
    to <name>.csv, or to <name>_part_<k>.csv without a header when the write is longer than the limit."""
    if not os.path.exists(path):
        with open(path, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerow(header)
    limit = PART_ROWS[0]
    parts = [rows] if not limit or len(rows) <= limit else [rows[i:i + limit] for i in range(0, len(rows), limit)]
    for k, part in enumerate(parts):
        target = path if len(parts) == 1 else path[:-4] + "_part_%d.csv" % (k + 1)
        with open(target, "a", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(part)


def write(path, rows, legacy, micro, version="8.1", ops=None):
    ops = ops or OPS
    out = []
    for name, step, mstep, st, shape in rows:
        row = [name, step] if legacy else [0, name, step] + ([mstep] if micro and version != "1.2.0" else [])
        row += [fmt(st[o]) for o in ops]
        if not legacy and version == "8.1":
            row += [str(list(shape)), "torch.float32"]
        out.append(row)
    write_rows(path, v1_header(version, legacy, micro and version != "1.2.0", ops), out)


def write_actv(path, step, version, ops):
    """Activations (not imported), the root module's named by its suffix alone."""
    names = [".input", "layers.0.mlp.input"]
    if version == "1.2.0":
        header = ["vpp_stage", "module_name", "step"] + ["%s.%s" % (io, o) for io in ("input", "output") for o in ops]
        rows = [[0, "" if n == ".input" else n.rsplit(".", 1)[0], step] + ["1.5"] * (2 * len(ops)) for n in names]
    else:
        header = ["vpp_stage", "name", "step", "micro_step"] + ops + (["shape", "dtype"] if version == "8.1" else [])
        rows = [[0, n, step, 0] + ["1.5"] * len(ops) + (["[4, 8]", "torch.float32"] if version == "8.1" else [])
                for n in names]
    write_rows(path, header, rows)


def write_l2(folder, suffix, step):
    """L2 hook features (recording_l2_features): columns of their own, not the user's ops."""
    write_rows(os.path.join(folder, "attention_hook_" + suffix),
               ["vpp_stage", "name", "step", "micro_step", "entropy", "softmax_max"],
               [[0, "layers.0.attention.core_attention", step, 0, "2.3125", "0.8125"]])
    write_rows(os.path.join(folder, "linear_hook_" + suffix), ["vpp_stage", "name", "step", "sr", "kernel_norm"],
               [[0, "layers.0.mlp.dense_h_to_4h", step, "3.5", "12.25"]])


def parse_args():
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
    ap.add_argument("--version", default="8.1", choices=["1.2.0", "1.2.2", "8.1"])
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--single-process", action="store_true", help="V1 <= 1.2: <time>-<8 hex>, one rank")
    ap.add_argument("--part-rows", type=int, default=0)
    ap.add_argument("--l2-hooks", action="store_true")
    ap.add_argument("--nan-grad", action="store_true", help="a NaN in rank 2's gradient of parameter 2 at step 6")
    ap.add_argument("--tiny-grad", action="store_true", help="final_layernorm's gradients 1e-5 the others")
    ap.add_argument("--only-ranks", default="", help="the ranks that write, e.g. 3 or 0,2,3")
    ap.add_argument("--vpp-list", action="store_true", help="V2: a list of models (names 0:<name>)")
    ap.add_argument("--nan-column", default="", help="V2: a statistic some row lacked (nan in every row)")
    ap.add_argument("--broken", default="", choices=["", "bad-number", "missing-column", "mixed-steps",
                                                     "two-folders", "ragged-row", "both-layouts", "missing-rank",
                                                     "bad-anomaly", "part-without-header"])
    ap.add_argument("--anomalies", action="store_true", help="V1 alerts in anomaly_detected/")
    ap.add_argument("--call-id-unknown", action="store_true", help="alerts with call_id -1")
    ap.add_argument("--analyse", action="store_true", help="also msprobe's anomaly_analyse.json")
    ap.add_argument("--alerts-only", action="store_true", help="only anomaly_detected/")
    ap.add_argument("--seed", type=int, default=7)
    return ap.parse_args()


def rank_folder(root, r, v2, single):
    if v2:
        return os.path.join(root, "rank_%d" % r)
    if single:
        return os.path.join(root, "Dec01_12-00-00-1a2b3c00")
    return os.path.join(root, "Dec01_12-00-%02d-rank%d-%08x" % (r, r, 0x1a2b3c00 + r))


def main():
    a = parse_args()
    v2 = a.layout == "v2"
    if a.single_process:
        a.ranks = 1
    NAN_TEXT[0] = "" if a.version == "1.2.0" else "nan"
    PART_ROWS[0] = a.part_rows
    V2["vpp_list"], V2["nan_column"] = a.vpp_list, a.nan_column
    ops = a.ops.split(",")
    writing = set(int(r) for r in a.only_ranks.split(",")) if a.only_ranks else set(range(a.ranks))
    rng = np.random.default_rng(a.seed)
    root = os.path.join(a.out, "monitor_v2_out" if v2 else "monitor_output")
    folders = [rank_folder(root, r, v2, a.single_process) for r in range(a.ranks)]
    for r in writing:
        os.makedirs(folders[r])
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
        local = [[rng.standard_normal(shape).astype(np.float32) * (0.1 + 0.02 * p) *
                  (1e-5 if a.tiny_grad and p == len(PARAMS) - 1 else 1.0) for p, (_, shape) in enumerate(PARAMS)]
                 for _ in range(a.ranks)]
        if a.mistake == "shard-overlap":
            local = [local[0]] * a.ranks
        if a.nan_grad and step == 6:
            local[2][2][3] = np.nan
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
            if r not in writing:
                continue
            if v2:
                write_v2_rank(folders[r], suffix, step, unreduced, reduced, origin, updated, a.micro_steps)
                continue
            v1 = lambda rows: [(n, step, m, stats(g), shape) for n, m, g, shape in rows]  # noqa: E731
            put = lambda prefix, rows, micro=False: write(  # noqa: E731
                os.path.join(folders[r], prefix + suffix), v1(rows), a.legacy_header, micro, a.version, ops)
            put("grad_unreduced_", unreduced, a.micro_steps > 0)
            if not a.dp_group or r == 0:
                put("grad_reduced_", reduced)
            if a.version == "8.1":
                put("param_origin_", origin)
                put("param_updated_", updated)
                if step > 0:  # the optimizer's moments exist from its first step on
                    put("exp_avg_", [(n, 0, np.abs(g), s) for n, _, g, s in reduced])
                    put("exp_avg_sq_", [(n, 0, g * g, s) for n, _, g, s in reduced])
            else:
                put("param_", origin)
            write_actv(os.path.join(folders[r], "actv_" + suffix), step, a.version, ops)
            if a.l2_hooks:
                write_l2(folders[r], suffix, step)
        weights = [[w[p] - 0.01 * mean[p] for p in range(len(PARAMS))] for w in weights]

    break_tree(a, folders, v2)
    if a.anomalies or a.broken == "bad-anomaly" or a.alerts_only:
        write_anomalies(root, a.ranks, a.broken == "bad-anomaly", a.call_id_unknown, a.analyse)
    if a.alerts_only:
        for f in folders:
            shutil.rmtree(f, ignore_errors=True)
    print(root)


def break_tree(a, folders, v2):
    bad = os.path.join(folders[min(2, a.ranks - 1)], "weight_grad_step5-9.csv" if v2 else "grad_unreduced_5-9.csv")
    if a.broken == "bad-number":
        lines = open(bad, newline="").read().splitlines()
        parts = lines[3].split(",")
        parts[5 if v2 else 3] = "1.2.3"
        lines[3] = ",".join(parts)
        open(bad, "w").write("\n".join(lines) + "\n")
    elif a.broken == "missing-column":
        lines = open(bad, newline="").read().splitlines()
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
    elif a.broken == "part-without-header":
        os.remove(bad)  # written with --part-rows: its rows are in the part files, its header is gone


def write_anomalies(root, ranks, broken, call_id_unknown=False, analyse=False):
    """Two alerts at step 7, on ranks 1 and 3 (AnomalyNan, AnomalyTurbulence), an empty file for the others,
    as AnomalyDataWriter writes them (save_json, indent 1); broken: rank 2's file cut short. analyse: the
    analysis's anomaly_analyse.json beside the rank folders, the same entries again."""
    everything = {}
    for r in range(ranks):
        entries = {}
        if r in (1, 3):
            tag = "0:layers.0.attention.dense.bias/rank%d/post_grad" % r
            rule, value = ("AnomalyNan", "nan") if r == 1 else ("AnomalyTurbulence", "3.52")
            call_id = -1 if call_id_unknown else 40 + r
            entries["%s_step_7_call_%d" % (tag, call_id)] = {
                "rank": r, "step": 7, "micro_step": 0, "pp_stage": 0, "vpp_stage": 0, "call_id": call_id,
                "tag_name": tag,
                "message": "Rule %s reports anomaly signal in ('%s', 'norm') at step 7, current value %s, "
                           "history mean 0.4312." % (rule, tag, value),
                "group_mates": list(range(ranks))}
        everything.update(entries)
        folder = os.path.join(root, "anomaly_detected", "rank%d" % r)
        os.makedirs(folder)
        text = json.dumps(entries, indent=1)
        with open(os.path.join(folder, "anomaly.json"), "w") as f:
            f.write(text[:len(text) // 2] if broken and r == 2 else text)
    if analyse:
        with open(os.path.join(root, "anomaly_detected", "anomaly_analyse.json"), "w") as f:
            json.dump(everything, f, indent=1)


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
    write_v2(os.path.join(folder, "module_" + suffix),
             [(".output.0", step, "forward", 0, stats32(updated[3][2]))], False)  # the root module
    write_v2(os.path.join(folder, "cc_" + suffix),
             [("all_reduce.0.train.py[42]", step, "comm", 0, stats32(reduced[0][2]))], False, vpp=False)


if __name__ == "__main__":
    main()
