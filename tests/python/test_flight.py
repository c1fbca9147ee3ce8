"""`ranksight-cli import-flight-recorder` on dumps written by tests/flight/make_fr_dumps.py the way PyTorch's
flight recorder writes them (Debian's torch 1.13 has none): which collective each rank reached, the first
collective where ranks disagree, `diagnose` naming collective-mismatch, the join with a recorded run, and
broken or hostile dumps refused with one line and nothing written (a hostile pickle runs nothing); every
writer's names, versions and entry forms (PyTorch's, torch_npu's with its Python tracebacks, the analyser
tests'); a join only with a run the dumps can belong to, and collectives before the run never placed in a
step of it. Run from ctest (py_flight) with RANKSIGHT_CLI."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ranksight import runfile  # noqa: E402

GEN = os.path.join(ROOT, "tests", "flight", "make_fr_dumps.py")
CLI = os.environ.get("RANKSIGHT_CLI")
# make_fr_dumps.py's clock: step k's collectives are enqueued BASE + k * STEP (+ up to 82 ms).
BASE_NS, STEP_NS = 1764750000000000000, 1_250_000_000
NS_2024 = 1714500000 * 10**9  # 2024-04-30
NS_2026 = 1767225600 * 10**9  # 2026-01-01


def run_meta(ranks, absent=()):
    return dict(model="mlp", world_size=ranks, batch_per_rank=2, precision="O0", loss_scale="none",
                data="synthetic", seed=1, sketch_dim=0, weight_every=0, planned_steps=10, config={}, rank_table={},
                environment={}, source="pytorch-ddp", absent=list(absent), params=[("w", (2,))], buffer_names=[],
                cards=[])


def flight_config(path):
    with h5py.File(path, "r") as f:
        cfg = f.attrs["config"]
        return json.loads(cfg.decode() if isinstance(cfg, bytes) else cfg)["flight_recorder"]


def strings(dataset):
    return [x.decode() for x in dataset[:]]


@unittest.skipUnless(CLI, "RANKSIGHT_CLI is not set")
class FlightRecorderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def dumps(self, name, *args):
        out = os.path.join(self.dir.name, name)
        subprocess.run(["/usr/bin/python3", GEN, out, *args], check=True, timeout=120, capture_output=True)
        return out

    def cli(self, *args):
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)

    def imported(self, src, *extra):
        out = os.path.join(self.dir.name, os.path.basename(src) + ".h5")
        p = self.cli("import-flight-recorder", src, "--out", out, *extra)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out, p.stdout

    def findings(self, path):
        p = self.cli("diagnose", path, "--json")
        self.assertIn(p.returncode, (0, 3), p.stderr)
        return json.loads(p.stdout)["findings"]

    def assert_refused(self, src, *words):
        out = os.path.join(self.dir.name, "refused.h5")
        p = self.cli("import-flight-recorder", src, "--out", out)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        for w in words:
            self.assertIn(w, lines[0])
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(self.dir.name) if "importing" in f], [])
        return lines[0]

    def test_clean_dumps_agree_and_diagnose_nothing(self):
        out, text = self.imported(self.dumps("clean", "--scenario", "clean"))
        self.assertIn("4 ranks, 120 collectives of 1 process group from 4 dumps (nccl, version 2.10)", text)
        self.assertIn("the ranks agree on every collective they dumped", text)
        self.assertEqual(self.findings(out), [])
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["source"].decode() if isinstance(f.attrs["source"], bytes)
                             else f.attrs["source"], "flight-recorder")
            self.assertEqual(f["/collectives/seq"].shape, (120,))
            self.assertEqual(sorted(set(f["/collectives/rank"][:].tolist())), [0, 1, 2, 3])
            self.assertTrue((f["/collectives/state"][:] == 2).all())
            self.assertTrue(np.isnan(f["/collectives/duration_ms"][:]).all(), "timing was off: not recorded")

    def test_a_rank_that_never_arrived_is_named(self):
        out, text = self.imported(self.dumps("hang", "--scenario", "hang"))
        self.assertIn("first disagreement: rank 1 never reached collective #22 of group 0 (default_pg)", text)
        self.assertIn("rank 1's last collective is #21", text)
        f = self.findings(out)
        self.assertEqual([x["cause"] for x in f], ["collective-mismatch"])
        self.assertEqual(f[0]["ranks"], [1])
        self.assertIn("/job/train.py:88 train_step", f[0]["evidence"])

    def test_every_kind_of_disagreement(self):
        for scenario, words in (("size-mismatch", "size mismatch at collective #22"),
                                ("op-mismatch", "operation mismatch at collective #22"),
                                ("dtype-mismatch", "dtype mismatch at collective #22"),
                                ("behind", "rank 1 is 13 collectives behind: rank 1's dump ends at #9"),
                                ("missing-rank", "rank 1 left no dump")):
            with self.subTest(scenario=scenario):
                out, text = self.imported(self.dumps(scenario, "--scenario", scenario))
                self.assertIn(words, text)
                f = self.findings(out)
                self.assertEqual([x["cause"] for x in f], ["collective-mismatch"])
                self.assertEqual(f[0]["ranks"], [1])

    def test_every_encoding_reads_alike(self):
        """The pickle as PyTorch's C++ Pickler writes it, as Python's pickle writes it, the JSON form,
        torch_npu's HCCL dumps (version 2.4, hccl: names) and memo ids past 255 give the same answer."""
        for name, args in (("python", ["--encoder", "python"]), ("json", ["--format", "json"]),
                           ("npu", ["--npu", "--timing"]), ("v27", ["--version", "2.7"]),
                           ("deep", ["--stack-depth", "100"])):
            with self.subTest(encoding=name):
                out, text = self.imported(self.dumps(name, "--scenario", "hang", *args))
                self.assertIn("rank 1 never reached collective #22", text)
                self.assertEqual(self.findings(out)[0]["ranks"], [1])
        with h5py.File(os.path.join(self.dir.name, "npu.h5"), "r") as f:
            self.assertEqual(f["/collectives/op"][0].decode(), "all_reduce")
            durations = f["/collectives/duration_ms"][:]
            done = f["/collectives/state"][:] == 2
            self.assertTrue((durations[done] > 0).all(), "--timing records each completed collective's time")

    def test_wrapped_ring_buffers_are_aligned(self):
        out, text = self.imported(self.dumps("wrapped", "--scenario", "hang", "--buffer", "20", "--steps", "12"))
        self.assertIn("rank 1 never reached collective #28", text)

    def test_joined_with_the_recorded_run_the_step_is_known(self):
        """The job's own run file (written here with runfile.py, as ranksight.ddp.Recorder writes it, steps
        0-6 ended 0.5 s into each step's span) places each collective in its step; the hung collective is
        step 7's, the step in progress."""
        run = os.path.join(self.dir.name, "job.h5")
        meta = dict(model="mlp", world_size=4, batch_per_rank=2, precision="O0", loss_scale="none", data="synthetic",
                    seed=1, sketch_dim=0, weight_every=0, planned_steps=10, config={}, rank_table={},
                    environment={}, source="pytorch-ddp", absent=[], params=[("w", (2,))], buffer_names=[],
                    cards=[])
        w = runfile.RunFileWriter(run, meta)
        for k in range(7):
            w.append_step(dict(step=k, epoch=0, lr=0.1, end_ns=BASE_NS + k * STEP_NS + 500_000_000,
                               loss=[1.0] * 4))
        w.close("killed")
        out, text = self.imported(self.dumps("hang", "--scenario", "hang"), "--run", run)
        self.assertIn("joined with 7 steps", text)
        self.assertIn("collective #22 of group 0 (default_pg) (step 7)", text)
        f = self.findings(out)
        self.assertEqual(f[0]["cause"], "collective-mismatch")
        self.assertEqual(f[0]["first_step"], 7)
        with h5py.File(out, "r") as h:
            self.assertEqual(h["/steps/step"].shape, (7,), "the run's own steps are kept")
            steps = h["/collectives/step"][:]
            seq = h["/collectives/seq"][:]
            self.assertEqual(sorted(set(steps[seq == 4].tolist())), [1], "collective #4 is step 1's second")

    def test_a_run_without_step_times_cannot_be_joined(self):
        run = os.path.join(self.dir.name, "old.h5")
        meta = dict(model="mlp", world_size=4, batch_per_rank=2, precision="O0", loss_scale="none", data="synthetic",
                    seed=1, sketch_dim=0, weight_every=0, planned_steps=2, config={}, rank_table={}, environment={},
                    source="pytorch-ddp", absent=["/steps/end_ns"], params=[("w", (2,))], buffer_names=[], cards=[])
        w = runfile.RunFileWriter(run, meta)
        w.append_step(dict(step=0, epoch=0, lr=0.1, loss=[1.0] * 4))
        w.close("done")
        src = self.dumps("hang", "--scenario", "hang")
        p = self.cli("import-flight-recorder", src, "--out", os.path.join(self.dir.name, "x.h5"), "--run", run)
        self.assertEqual(p.returncode, 2)
        self.assertIn("records no step times (/steps/end_ns)", p.stderr)

    def test_hostile_pickles_are_refused_and_run_nothing(self):
        for broken in ("hostile-global", "hostile-reduce"):
            with self.subTest(broken=broken):
                src = self.dumps(broken, "--broken", broken)
                line = self.assert_refused(src, "nccl_trace_rank_0", "would import or call Python code",
                                           "nothing was run")
                self.assertRegex(line, "opcode (GLOBAL|STACK_GLOBAL|REDUCE)")
                self.assertFalse(os.path.exists(os.path.join(src, "pwned")))

    def test_pickles_that_expand_are_refused_and_long_lists_are_read_once(self):
        """A list that appends copies of itself doubles with each 3 bytes: refused long before it fills the
        memory. A long list Python memoized when empty (as pickle does) is read in one pass (each APPEND once,
        not a copy of the list per APPEND): refused here only because a dump is a dict."""
        folder = os.path.join(self.dir.name, "expand")
        os.mkdir(folder)
        with open(os.path.join(folder, "nccl_trace_rank_0"), "wb") as f:
            f.write(b"\x80\x02]q\x00" + b"h\x00a" * 40 + b".")
        self.assert_refused(folder, "nccl_trace_rank_0", "expands into more than")
        with open(os.path.join(folder, "nccl_trace_rank_0"), "wb") as f:
            f.write(b"\x80\x02]\x94" + b"(" + b"N" * 1000 + b"e" + b"Na" * 300000 + b".")
        self.assert_refused(folder, "nccl_trace_rank_0", "the dump is a list, expected a dict")

    def test_broken_dumps_are_refused_with_one_line(self):
        for broken, words in (("truncated", ["nccl_trace_rank_0", "truncated"]),
                              ("not-a-dict", ["nccl_trace_rank_0", "expected a dict"]),
                              ("bad-version", ["'version' is 'two'"]),
                              ("missing-entries-key", ["'entries' is missing"]),
                              ("ragged-versions", ["nccl_trace_rank_1", "version 2.4", "version 2.10"]),
                              ("bad-ranks", ["ranks '[0, 1, x]' is not a list of ranks"]),
                              ("no-rank-in-name", ["nccl_trace_rank_abc", "is not a number"])):
            with self.subTest(broken=broken):
                self.assert_refused(self.dumps(broken, "--broken", broken), *words)

    def test_no_dumps_and_an_existing_target(self):
        empty = os.path.join(self.dir.name, "empty")
        os.mkdir(empty)
        self.assert_refused(empty, "no flight-recorder dumps")
        src = self.dumps("clean", "--scenario", "clean")
        out, _ = self.imported(src)
        p = self.cli("import-flight-recorder", src, "--out", out)
        self.assertEqual(p.returncode, 2)
        self.assertIn("already exists", p.stderr)

    def write_run(self, name, ranks, ends):
        """A recorded run (as ranksight.ddp.Recorder writes it) whose steps 0.. ended at `ends` (ns)."""
        run = os.path.join(self.dir.name, name)
        w = runfile.RunFileWriter(run, run_meta(ranks))
        for k, end in enumerate(ends):
            w.append_step(dict(step=k, epoch=0, lr=0.1, end_ns=end, loss=[1.0] * ranks))
        w.close("killed")
        return run

    def test_every_writers_file_names(self):
        """PyTorch's defaults, torch_npu's and its tests' (trace_), rank_, bare numbers, and host names in
        front of the prefix, as jobs writing to one shared folder leave them: each rank read from its name."""
        for prefix, args in (("nccl_trace_rank_", []), ("comm_lib_trace_rank_", []), ("trace_", []),
                             ("rank_", []), ("hccl_trace_rank_", ["--npu"]), ("", []),
                             ("nccl_trace_rank_", ["--hosts"]), ("trace_", ["--hosts", "--format", "json"])):
            with self.subTest(prefix=prefix, args=args):
                name = "names_%s_%d" % (prefix or "bare", len(args))
                src = self.dumps(name, "--scenario", "hang", "--prefix", prefix, *args)
                out, text = self.imported(src)
                self.assertIn("4 ranks", text)
                self.assertIn("rank 1 never reached collective #22", text)
                cfg = flight_config(out)
                self.assertEqual(cfg["prefix"], prefix)
                self.assertEqual(cfg["dumped_ranks"], [0, 1, 2, 3])
                if "--hosts" in args:
                    self.assertEqual(cfg["hosts"], {"0": "node0", "1": "node0", "2": "node1", "3": "node1"})
                with h5py.File(out, "r") as f:
                    self.assertEqual(sorted(set(f["/collectives/rank"][:].tolist())), [0, 1, 2, 3])

    def test_a_torch_npu_folder_with_tracebacks_imports_with_op_names(self):
        """torch_npu's dump folder as its tests leave it: trace_<rank> with profiling_name "", and each rank's
        trace_<rank>_py_traceback beside it. The ops are named from the innermost frame, and each rank's
        traceback is kept and summarised."""
        src = self.dumps("npu", "--npu", "--prefix", "trace_", "--unnamed", "--py-traceback",
                         "--scenario", "hang")
        self.assertTrue(os.path.exists(os.path.join(src, "trace_0_py_traceback")))
        out, text = self.imported(src)
        self.assertIn("from 4 dumps (hccl, version 2.4)", text)
        self.assertIn("rank 1 never reached collective #22 of group group_name_0", text)
        self.assertIn("rank 0 Python traceback: main thread at /job/train.py:91 in train_step", text)
        self.assertIn("rank 1 Python traceback: main thread at /job/data.py:40 in next_batch", text)
        self.assertNotIn("(unnamed)", text)
        with h5py.File(out, "r") as f:
            self.assertEqual(set(strings(f["/collectives/op"])), {"all_reduce"})
        cfg = flight_config(out)
        self.assertEqual(sorted(cfg["py_tracebacks"]), ["0", "1", "2", "3"])
        self.assertIn("time.sleep(30)", cfg["py_tracebacks"]["1"])
        self.assertNotIn("time.sleep(30)", cfg["py_tracebacks"]["0"])

    def test_every_version_reads(self):
        for version in ("2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10"):
            for fmt in ("pickle", "json"):
                with self.subTest(version=version, format=fmt):
                    src = self.dumps("v%s_%s" % (version, fmt), "--version", version, "--format", fmt,
                                     "--scenario", "hang")
                    out, text = self.imported(src)
                    self.assertIn("version %s)" % version, text)
                    self.assertIn("rank 1 never reached collective #22", text)
                    lib = flight_config(out)["comm_lib_version"]
                    self.assertEqual(lib, "" if version in ("2.4", "2.5", "2.6") else "2.21.5")

    def test_entries_as_the_analyser_tests_write_them(self):
        """String sequence ids, one dtype string, the entry's group desc differing from pg_config's, the
        process group as a list: one group, and the same answer. Their times are 0 (not recorded), so a join
        with a run has no evidence and is refused."""
        src = self.dumps("analyser", "--analyser-style", "--pg-list", "--encoder", "python", "--scenario", "hang")
        out, text = self.imported(src)
        self.assertIn("of 1 process group from 4 dumps", text)
        self.assertIn("rank 1 never reached collective #22 of group 0 (default_pg)", text)
        with h5py.File(out, "r") as f:
            self.assertEqual(set(strings(f["/collectives/dtypes"])), {"float32"})
            self.assertEqual(f["/collectives/seq"][:].max(), 22)
        run = self.write_run("any.h5", 4, [BASE_NS + k * STEP_NS for k in range(3)])
        p = self.cli("import-flight-recorder", src, "--out", os.path.join(self.dir.name, "j.h5"), "--run", run)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("the dumps record no enqueue times (time_created_ns is 0 or missing)", p.stderr)

    def test_p2p_coalesced_and_bfloat16(self):
        """batch_isend_irecv between ranks 0 and 1 (send 1->0 / recv 0<-1, collective_seq_id 0, counted by
        p2p_seq_id) and its coalesced entry with empty sizes, in a BFloat16 job: listed, not matched, and the
        collectives' answer is unchanged."""
        src = self.dumps("p2p", "--p2p", "--dtype", "BFloat16", "--scenario", "hang", "--timing")
        out, text = self.imported(src)
        self.assertIn("rank 1 never reached collective #22", text)
        with h5py.File(out, "r") as f:
            op, rank = strings(f["/collectives/op"]), f["/collectives/rank"][:]
            sizes, p2p, seq = strings(f["/collectives/sizes"]), f["/collectives/p2p"][:], f["/collectives/seq"][:]
            dtypes = strings(f["/collectives/dtypes"])
            dur, state = f["/collectives/duration_ms"][:], f["/collectives/state"][:]
        sends = [i for i, o in enumerate(op) if o == "send 1->0"]
        recvs = [i for i, o in enumerate(op) if o == "recv 0<-1"]
        coalesced = [i for i, o in enumerate(op) if o == "coalesced"]
        self.assertEqual({int(rank[i]) for i in sends}, {1})
        self.assertEqual({int(rank[i]) for i in recvs}, {0})
        self.assertEqual(sorted(int(seq[i]) for i in sends), list(range(1, 8)), "p2p_seq_id, one per step")
        self.assertTrue(all(p2p[i] == 1 for i in sends + recvs + coalesced))
        self.assertEqual({sizes[i] for i in coalesced}, {"in [] out []"})
        self.assertTrue(np.isnan(dur[sends]).all(), "a p2p op inside a batch has no duration of its own")
        self.assertTrue((state[coalesced] == 2).all())
        self.assertIn("BFloat16", set(dtypes))

    def test_a_join_with_another_jobs_run_is_refused(self):
        """2-rank dumps of 2024 and a 4-rank run of 2026: the ranks fit, the times do not. Refused with one
        line that says so (once every collective landed on step 0 and diagnose said 'first step: 0')."""
        run = self.write_run("run2026.h5", 4, [NS_2026 + k * STEP_NS for k in range(1, 8)])
        src = self.dumps("old", "--ranks", "2", "--base-ns", str(NS_2024), "--scenario", "hang", "--at", "5")
        out = os.path.join(self.dir.name, "joined.h5")
        p = self.cli("import-flight-recorder", src, "--out", out, "--run", run)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        self.assertIn("rank 0's collectives were enqueued 2024-04-30", lines[0])
        self.assertIn("outside the run", lines[0])
        self.assertIn("2026-01-01", lines[0])
        self.assertIn("allowing 10 s for clocks", lines[0])
        self.assertFalse(os.path.exists(out))

    def test_a_join_with_fewer_ranks_is_refused(self):
        run = self.write_run("run2.h5", 2, [BASE_NS + k * STEP_NS + 500_000_000 for k in range(7)])
        src = self.dumps("hang", "--scenario", "hang")
        p = self.cli("import-flight-recorder", src, "--out", os.path.join(self.dir.name, "x.h5"), "--run", run)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn("the dumps name rank 3, but the run", p.stderr)
        self.assertIn("has ranks 0-1", p.stderr)

    def test_collectives_before_the_run_are_not_in_a_step(self):
        """The recorder started at the job's third step (two warm-up steps before it), and rank 1's sizes
        differed in step 1, silently: the disagreement is 'before the run', and diagnose names no step."""
        run = self.write_run("late.h5", 4, [BASE_NS + (k + 2) * STEP_NS + 500_000_000 for k in range(8)])
        src = self.dumps("silent", "--scenario", "silent-size-mismatch", "--at", "1")
        out, text = self.imported(src, "--run", run)
        self.assertIn("size mismatch at collective #4 of group 0 (default_pg) (before the run)", text)
        self.assertIn("note: 24 collectives were enqueued before the run's first recorded step (step 0", text)
        f = self.findings(out)
        self.assertEqual([x["cause"] for x in f], ["collective-mismatch"])
        self.assertEqual(f[0]["first_step"], -1)
        self.assertIn("before the run", f[0]["evidence"])
        with h5py.File(out, "r") as h:
            steps, seq = h["/collectives/step"][:], h["/collectives/seq"][:]
            self.assertTrue((steps[seq <= 6] == -2).all(), "steps 0 and 1 of the job: before the run")
            self.assertEqual(sorted(set(steps[(seq >= 7) & (seq <= 9)].tolist())), [0], "the job's step 2")

    def test_the_analysers_own_test_dumps(self):
        """The dumps test_fr_analysis.py builds (LOADED_FR_DETAIL_TEMPLATE, create_one_entry): version 2.8,
        group '1' of split_group with other members on each rank, entries with string sequence ids, a dtype
        string, time 0, no timeout, a coalesced entry with [[]] sizes. Each split group is its own group."""
        import pickle
        folder = os.path.join(self.dir.name, "analyser_db")
        os.mkdir(folder)

        def event(record_id, name, sizes, pg=("0", "default"), seq=1):
            return {"profiling_name": "nccl:" + name, "state": "completed", "process_group": pg,
                    "input_sizes": sizes, "output_sizes": sizes, "input_dtypes": "float32",
                    "output_dtypes": "float32", "collective_seq_id": str(seq), "p2p_seq_id": "0",
                    "time_created_ns": 0, "frames": [], "record_id": record_id, "is_p2p": False}
        for rank in (0, 1):
            dump = {"entries": [event(0, "all_reduce", [[4, 4]]),
                                event(1, "all_reduce", [[5, 5]], ("1", "sub_pg"), 1),
                                event(2, "broadcast", [[4, 4]], seq=2), event(3, "coalesced", [[]], seq=2)],
                    "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"},
                                  "1": {"name": "1", "desc": "sub_pg", "ranks": "[%d]" % rank}},
                    "rank": rank, "version": "2.8"}
            with open(os.path.join(folder, "dump_file_rank_%d" % rank), "wb") as f:
                pickle.dump(dump, f)
        out, text = self.imported(folder)
        self.assertIn("2 ranks, 8 collectives of 3 process groups from 2 dumps (nccl, version 2.8)", text)
        self.assertIn("group 1 (sub_pg, ranks 0): 1 collectives, 1 ranks", text)
        self.assertIn("group 1 (sub_pg, ranks 1): 1 collectives, 1 ranks", text)
        self.assertIn("the ranks agree on every collective they dumped", text)
        with h5py.File(out, "r") as f:
            self.assertEqual(strings(f["/collectives/op"])[:4], ["all_reduce", "all_reduce", "broadcast", "coalesced"])
            self.assertEqual(strings(f["/collectives/sizes"])[3], "in [[]] out [[]]")
            self.assertEqual(f["/collectives/timeout_ms"][:].tolist(), [-1] * 8, "not recorded")


if __name__ == "__main__":
    unittest.main()
