#!/usr/bin/python3
"""Writes the seed corpora fuzz/corpus/<target>/ from the repository's own inputs (rank tables, presets) and
a few hand-made programs. Re-run after changing an input format; libFuzzer grows its own corpus from these."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    if target == "runfile" and not name.startswith("read-only"):
        data = data[:1] + bytes([data[1] | 8]) + data[2:]  # bit 3: also inspect, export CSV and slice
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read()


# fuzz_ranktable: first byte expectedRanks (0xFF: -1), then hccl.json text.
for path, ranks in [("tests/data/ranktables/valid_4p.json", 4), ("tests/data/ranktables/valid_16p_2servers.json", 16),
                    ("tests/data/ranktables/several_problems.json", 0xFF), ("tests/data/ranktables/malformed.json", 0xFF),
                    ("resources/ranktables/hccl_4p.json", 0xFF), ("../shared/examples/hccl_4p.json", 8)]:
    if os.path.exists(os.path.join(ROOT, path)):
        write("ranktable", os.path.basename(os.path.dirname(path)) + "-" + os.path.basename(path),
              bytes([ranks]) + read(path))

# fuzz_config: 0 fromJson, 1 parseLossScale, 2 [worldSize] parseFault list, 3 [key index] set.
for preset in ("quick.json", "seed.json"):
    write("config", "preset-" + preset, b"\x00" + read("resources/presets/" + preset))
write("config", "all-keys.json", b"\x00" + b'{"model":"mlp","ranks":2,"batch":8,"epochs":1,"precision":"O3",'
      b'"loss_scale":"fixed:1024","data":"cifar10:/d","seed":3,"lr":0.1,"momentum":0.8,"weight_decay":0,'
      b'"lr_schedule":"constant","warmup_steps":0,"broadcast":false,"gradients_mean":false,"telemetry":false,'
      b'"weight_every":5,"sketch_dim":4,"eval_every":10,"eval_samples":64,"flight_steps":2,'
      b'"flight_budget_mb":16,"timeout_ms":1000,"compute_threads":1,"faults":["rank-exit@5:1","grad-sum"]}')
for i, text in enumerate([b"dynamic", b"dynamic:65536", b"fixed:1024", b"none"]):
    write("config", "lossscale-%d" % i, b"\x01" + text)
write("config", "faults-1", b"\x02\x04" + b"rank-exit@5:1,sdc-after@60:2,param-not-synced:fc.bias,straggler:3")
write("config", "faults-2", b"\x02\x02" + b"duplicate-rank-id:1,shard-uneven@3,init-mismatch")
for key, value in [(1, b"8"), (6, b"fixed:2"), (7, b"cifar10:/x"), (9, b"0.5"), (16, b"true"), (27, b"grad-sum,straggler")]:
    write("config", "set-%d" % key, b"\x03" + bytes([key]) + value)

# fuzz_cifar: selector (bit 0 test split, bit 1 leave a file out, bit 2 nested dir), then the files.
rng = random.Random(7)


def records(n):
    return b"".join(bytes([rng.randrange(10)]) + bytes(rng.randrange(256) for _ in range(3072)) for _ in range(n))


write("cifar", "test-2", b"\x01" + records(2))
write("cifar", "train-5files", b"\x00" + b"\x01" + records(1) + b"\x00" + b"\x02" + records(2) + b"\x01" + records(1)
      + records(1))
write("cifar", "train-missing", b"\x02\x03" + b"\x01" + records(1) + b"\x01" + records(1) + b"\x01" + records(1)
      + b"\x01" + records(1) + records(1))
write("cifar", "test-bad-label", b"\x01" + bytes([10]) + bytes(3072))
write("cifar", "test-nested", b"\x05" + records(1))

# fuzz_runfile: [seed index][mode: bits 0-2: 0-5 structural, 6 raw anywhere, 7 raw in data; bit 3: write back]
# [op count][ops...].
# Structural op codes (first byte % 12): 0 set extent, 1 set a table's extent, 2 recreate a dataset,
# 3 delete a link, 4 delete a root attribute, 5 replace one, 6/7 overwrite values, 8 change R/B/K and conform
# the tables, 9 flag the superblock open (killed writer), 10 cut the tail, 11 rewrite /params and conform.
for seed in (0, 1):
    write("runfile", "read-only-%d" % seed, bytes([seed, 0, 0]))
    write("runfile", "read-write-back-%d" % seed, bytes([seed, 8, 0]))
    write("runfile", "set-extent-%d" % seed, bytes([seed, 0, 1, 0, 36, 12]))          # one column, 3e9 rows
    write("runfile", "table-extent-%d" % seed, bytes([seed, 0, 1, 1, 0, 11]))         # all step columns
    write("runfile", "recreate-%d" % seed, bytes([seed, 0, 1, 2, 14, 7, 2, 3, 4, 0]))
    write("runfile", "delete-%d" % seed, bytes([seed, 0, 2, 3, 1, 20, 4, 4]))
    write("runfile", "attr-%d" % seed, bytes([seed, 0, 2, 5, 4, 4, 8, 0, 5, 10, 0, 1, 3]))
    write("runfile", "values-%d" % seed, bytes([seed, 0, 2, 6, 36, 0, 3, 6, 30, 1, 0]))
    write("runfile", "conform-%d" % seed, bytes([seed, 0, 1, 8, 0, 4, 0]))
    write("runfile", "killed-cut-%d" % seed, bytes([seed, 0, 2, 9, 10, 200]))
    write("runfile", "params-%d" % seed, bytes([seed, 0, 1, 11, 2, 3, 0, 0]))
    write("runfile", "raw-%d" % seed, bytes([seed, 6, 4]) + struct.pack(">4H", 48, 0xFF, 900, 0x00))
    write("runfile", "raw-data-%d" % seed, bytes([seed, 7, 3, 5, 0, 0x7F, 9, 1, 0xFF, 2, 2, 0x80]))

# fuzz_import: [importer: 0 msprobe monitor, 1 msprobe dump, 2 flight recorder], then per file [name template]
# [rank 0-7][step 0-15][length: 3 bytes, big-endian][bytes]; the templates are ImportFuzz.cpp's, in order.
# The seeds are real trees, written by the tests' generators.
import re  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

TEMPLATES = {
    0: ["monitor_output/Dec03_10-00-00-rank{r}-0123abcd/grad_unreduced_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/grad_reduced_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/param_origin_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/param_updated_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/actv_{s}-{t}.csv",
        "monitor_output/anomaly_detected/rank{r}/anomaly.json",
        "monitor_v2_out/rank_{r}/weight_grad_step{s}-{t}.csv",
        "monitor_v2_out/rank_{r}/param_step{s}-{t}.csv",
        "monitor_v2_out/rank_{r}/optimizer_step{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rankx{r}-0123abcd/grad_unreduced_{s}-{t}.csv",
        "monitor_v2_out/rank_{r}/weight_grad_step{s}.csv",
        "monitor_output/Dec03_10-00-00-0123abcd/grad_unreduced_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/grad_unreduced_{s}-{t}_part_1.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/param_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/linear_hook_{s}-{t}.csv",
        "monitor_output/Dec03_10-00-00-rank{r}-0123abcd/exp_avg_{s}-{t}.csv",
        "monitor_output/anomaly_detected/anomaly_analyse.json",
        "monitor_v2_out/rank_{r}/cc_step{s}-{t}.csv"],
    1: ["step{s}/rank{r}/dump.json", "step{s}/rank{r}/stack.json", "step{s}/rank{r}/construct.json",
        "step{s}/rank/dump.json", "step{s}/proc{r}/dump.json"],
    2: ["nccl_trace_rank_{r}", "hccl_trace_rank_{r}", "nccl_trace_rank_{r}.pipe", "nccl_trace_rank_x{r}",
        "other_{r}", "trace_{r}", "trace_{r}_py_traceback", "{r}", "node0.nccl_trace_rank_{r}",
        "comm_lib_trace_rank_{r}"],
}


def template_of(mode, rel):
    """The template index, rank and step a generated file's path fits (the monitor's time and hex parts are
    the fuzzer's fixed ones)."""
    rel = re.sub(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}-rank(\d+)-[0-9a-f]{8}", r"Dec03_10-00-00-rank\1-0123abcd", rel)
    rel = re.sub(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}-[0-9a-f]{8}/", "Dec03_10-00-00-0123abcd/", rel)
    for i, t in enumerate(TEMPLATES[mode]):
        pattern = re.escape(t).replace(r"\{r\}", r"(?P<r>\d+)").replace(r"\{s\}", r"(?P<s>\d+)")
        pattern = pattern.replace(r"\{t\}", r"(?P<t>\d+)")
        m = re.fullmatch(pattern, rel)
        if m:
            return i, int(m.group("r")) if "r" in m.groupdict() else 0, int(m.groupdict().get("s") or 0)
    return None


def tree_program(mode, root):
    out = bytearray([mode])
    for dirpath, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            fit = template_of(mode, os.path.relpath(path, root))
            if fit is None:
                continue
            i, r, s = fit
            r %= 8  # the program's rank byte is 0-7 (a proc<pid> folder's pid is not)
            data = read(path)
            out += bytes([i, r, s]) + len(data).to_bytes(3, "big") + data
    return bytes(out)


GENERATORS = [
    (0, "monitor-v1", ["tests/msprobe/make_msprobe_tree.py", "--ranks", "2", "--steps", "5"]),
    (0, "monitor-v1-alerts", ["tests/msprobe/make_msprobe_tree.py", "--ranks", "2", "--steps", "5", "--anomalies"]),
    (0, "monitor-v2", ["tests/msprobe/make_msprobe_tree.py", "--ranks", "2", "--steps", "5", "--layout", "v2"]),
    (1, "dump-l0", ["tests/msprobe/make_msprobe_dump.py", "--ranks", "2", "--steps", "1", "--level", "L0"]),
    (1, "dump-nan", ["tests/msprobe/make_msprobe_dump.py", "--ranks", "2", "--steps", "2", "--level", "L0",
                     "--mistake", "nan@1:1"]),
    (2, "flight-hang", ["tests/flight/make_fr_dumps.py", "--ranks", "2", "--steps", "3", "--scenario", "hang"]),
    (2, "flight-json", ["tests/flight/make_fr_dumps.py", "--ranks", "2", "--steps", "3", "--format", "json",
                        "--scenario", "size-mismatch"]),
    (2, "flight-python", ["tests/flight/make_fr_dumps.py", "--ranks", "2", "--steps", "3", "--encoder", "python"]),
    # What real writers leave besides the documented layouts.
    (0, "monitor-v1-1.2.0-single", ["tests/msprobe/make_msprobe_tree.py", "--ranks", "1", "--steps", "5",
                                    "--version", "1.2.0", "--single-process", "--nan-grad"]),
    (0, "monitor-v1-parts", ["tests/msprobe/make_msprobe_tree.py", "--ranks", "2", "--steps", "5", "--part-rows",
                             "3", "--l2-hooks", "--anomalies", "--call-id-unknown", "--analyse"]),
    (0, "monitor-v2-subset", ["tests/msprobe/make_msprobe_tree.py", "--ranks", "4", "--steps", "5", "--layout",
                              "v2", "--only-ranks", "1,3"]),
    (1, "dump-proc", ["tests/msprobe/make_msprobe_dump.py", "--ranks", "1", "--steps", "2", "--level", "L0",
                      "--rank-folder", "proc"]),
    (2, "flight-npu-tracebacks", ["tests/flight/make_fr_dumps.py", "--ranks", "2", "--steps", "3", "--npu",
                                  "--prefix", "trace_", "--py-traceback", "--unnamed"]),
    (2, "flight-analyser", ["tests/flight/make_fr_dumps.py", "--ranks", "2", "--steps", "3", "--analyser-style",
                            "--p2p", "--hosts"]),
]
for mode, name, cmd in GENERATORS:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "tree")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, cmd[0]), out] + cmd[1:], check=True,
                       capture_output=True)
        write("import", name, tree_program(mode, out))
