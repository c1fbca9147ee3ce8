#!/usr/bin/python3
"""Peak memory of `ranksight-cli import-msprobe` on large msprobe Monitor V2 trees: the importer streams one
window of steps (the files covering the same steps, every rank's) at a time, so its memory should follow
ranks x parameters, not the number of steps.

Each tree is written here in V2's layout (rank_<N>/weight_grad_step<a>-<b>.csv with unreduced and reduced rows,
param_step<a>-<b>.csv with param_origin and param_updated, 5 steps per file as step_count_per_record does), with
synthetic statistics: a window's file is rendered once and written for every rank, which keeps writing a
multi-GB tree fast; the importer still parses every byte. Peak RSS is the import process's ru_maxrss.

    bench/import_memory_bench.py --cli build/release/app/ranksight-cli [--sizes 64x100x200,64x1000x200,...]
        [--work DIR] [--write docs/import-benchmark.md]
"""

import argparse
import os
import shutil
import subprocess
import sys
import time

from page_header import measured

HEADER = "vpp_stage,step,module_name,scope,min,max,mean,norm,nans\n"
PER_FILE = 5


def window_files(first, last, params):
    """The two files' text for steps first..last (the same for every rank)."""
    grad, param = [HEADER], [HEADER]
    for step in range(first, last + 1):
        for p in range(params):
            name = "layers.%d.weight" % p
            g = 1e-3 * (1 + (p % 7))
            grad.append("0,%d,%s,unreduced,%r,%r,%r,%r,0\n" % (step, name, -g, g, g * 1e-3, g * 30))
            grad.append("0,%d,%s,reduced,%r,%r,%r,%r,0\n" % (step, name, -g / 2, g / 2, g * 5e-4, g * 20))
            w = 0.5 + 0.001 * p
            param.append("0,%d,%s,param_origin,%r,%r,%r,%r,0\n" % (step, name, -w, w, 0.0, w * 40))
            param.append("0,%d,%s,param_updated,%r,%r,%r,%r,0\n" % (step, name, -w, w, 1e-6, w * 40))
    return "".join(grad), "".join(param)


def write_tree(root, ranks, steps, params):
    for r in range(ranks):
        os.makedirs(os.path.join(root, "rank_%d" % r))
    total = 0
    for first in range(0, steps, PER_FILE):
        last = min(steps, first + PER_FILE) - 1
        grad, param = window_files(first, last, params)
        for r in range(ranks):
            d = os.path.join(root, "rank_%d" % r)
            for kind, text in (("weight_grad", grad), ("param", param)):
                with open(os.path.join(d, "%s_step%d-%d.csv" % (kind, first, last)), "w") as f:
                    f.write(text)
                total += len(text)
    return total


def measure(cli, work, ranks, steps, params):
    root = os.path.join(work, "tree-%dx%dx%d" % (ranks, steps, params))
    shutil.rmtree(root, ignore_errors=True)
    t0 = time.monotonic()
    size = write_tree(root, ranks, steps, params)
    written = time.monotonic() - t0
    out = os.path.join(work, "import.h5")
    # A fresh process per import: ru_maxrss of the children is the import's own peak (the last child's).
    probe = ("import resource, subprocess, sys, time\n"
             "t = time.monotonic()\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "dt = time.monotonic() - t\n"
             "print(p.returncode, dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.stderr.write(p.stderr)\n")
    p = subprocess.run([sys.executable, "-c", probe, cli, "import-msprobe", root, "--out", out, "--force", "--quiet"],
                       capture_output=True, text=True)
    rc, seconds, rss_kb = p.stdout.split()
    if rc != "0":
        raise SystemExit("import failed: " + p.stderr)
    h5 = os.path.getsize(out)
    shutil.rmtree(root)
    os.remove(out)
    return dict(ranks=ranks, steps=steps, params=params, csv_mb=size / 2**20, files=ranks * 2 * -(-steps // PER_FILE),
                import_s=float(seconds), rss_mb=int(rss_kb) / 1024, h5_mb=h5 / 2**20, write_s=written)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sizes", default="64x100x200,64x1000x200,1024x50x200,1024x1000x200")
    ap.add_argument("--work", default="/tmp/ranksight-import-bench")
    ap.add_argument("--write", help="write the page (docs/import-benchmark.md)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rows = []
    print("| ranks | steps | parameters | csv files | csv MB | run file MB | import s | peak RSS MB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in a.sizes.split(","):
        r, s, p = (int(x) for x in size.split("x"))
        m = measure(a.cli, a.work, r, s, p)
        rows.append(m)
        line = "| %d | %d | %d | %d | %.0f | %.0f | %.1f | %.0f |" % (
            m["ranks"], m["steps"], m["params"], m["files"], m["csv_mb"], m["h5_mb"], m["import_s"], m["rss_mb"])
        rows[-1]["line"] = line
        print(line, flush=True)
    if a.write:
        page = ["# Importing large msprobe trees: memory", "",
                measured("bench/import_memory_bench.py --sizes %s --write %s" % (a.sizes, a.write)), "",
                "`ranksight-cli import-msprobe` on Monitor V2 trees (weight_grad and param files, 5 steps per file, "
                "synthetic statistics), peak resident memory of the import process. The importer reads every "
                "file twice: once to check it and learn the parameters, then one window of steps at a time "
                "(every rank's files of the same steps), which it writes before reading the next. Import seconds "
                "are wall time on this machine as it was (other work may have shared its cores); the page is "
                "about memory.", "",
                "| ranks | steps | parameters | csv files | csv MB | run file MB | import s | peak RSS MB |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|"] + [m["line"] for m in rows]
        with open(a.write, "w") as f:
            f.write("\n".join(page) + "\n")


if __name__ == "__main__":
    main()
