"""`ranksight-cli import-msprobe` on trees written by tests/msprobe/make_msprobe_tree.py in msprobe's layouts
(Monitor V1 and V2): the run file it writes opens, says where it came from and what it lacks, and diagnosis names
the mistake each tree holds (judged to the csv's rounding) or nothing for the clean tree; a broken tree exits
2 with one line naming the file and line, and writes nothing. Run from ctest (py_msprobe) with RANKSIGHT_CLI."""

import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CLI = os.environ.get("RANKSIGHT_CLI", "")
GEN = os.path.join(ROOT, "tests", "msprobe", "make_msprobe_tree.py")


@unittest.skipUnless(CLI, "needs RANKSIGHT_CLI")
class MsprobeImportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def tree(self, name, *options):
        out = os.path.join(self.dir.name, name)
        subprocess.run([sys.executable, GEN, out, *options], check=True, capture_output=True, timeout=120)
        return out

    def cli(self, *args):
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)

    def imported(self, name, *options):
        src = self.tree(name, *options)
        out = os.path.join(self.dir.name, name + ".h5")
        p = self.cli("import-msprobe", src, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out, p.stdout

    def diagnosis(self, path):
        p = self.cli("diagnose", path, "--json")
        self.assertIn(p.returncode, (0, 3), p.stderr)
        return json.loads(p.stdout)

    def test_clean_tree_imports_and_has_no_findings(self):
        path, out = self.imported("clean")
        self.assertIn("4 ranks, 12 steps, 6 parameters from 48 csv files", out)
        self.assertIn("not imported (no run-file column holds them): actv", out)
        j = json.loads(self.cli("inspect", path, "--json").stdout)
        self.assertEqual((j["source"], j["world_size"], j["steps_recorded"], j["parameter_tensors"]),
                         ("msprobe", 4, 12, 6))
        self.assertEqual(j["parameters"], 32 * 8 + 8 * 8 + 8 + 16 * 8 + 8 * 16 + 8)  # numel from the shapes
        self.assertIn("/grads/synced_fp", j["absent"])
        self.assertNotIn("/grads/local_norm", j["absent"])
        self.assertTrue(j["complete"])
        d = self.diagnosis(path)
        self.assertEqual(d["findings"], [])
        self.assertEqual(sorted(c["check"] for c in d["not_run"]),
                         ["BatchNorm statistics", "fp16 underflow", "loss scaling", "step timing"])

    def test_the_bug_report_says_only_what_the_tree_recorded(self):
        """An msprobe tree records gradient and parameter statistics, no loss, no card state, no seed: the
        report, steps.csv and inspect say "not recorded" there, name the tree as what it is, and open on the
        finding (the synced norms that part, though the tree has no event log)."""
        path, _ = self.imported("report-tree", "--mistake", "param-not-synced")
        f = self.diagnosis(path)["findings"]
        self.assertEqual(f[0]["cause"], "param-not-synced")
        out = os.path.join(self.dir.name, "report-tree-report")
        p = self.cli("report", path, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as fh:
            md = fh.read()
        self.assertIn("an msprobe Monitor tree: 4 ranks", md)
        self.assertNotIn("emulated Ascend", md)
        for row in ("| seed | not recorded |", "| ranks | 4 x batch not recorded per rank |",
                    "| precision | not recorded, loss scale not recorded |",
                    "| weight fingerprints | not recorded (weight norms every 1 steps) |",
                    "| sketch | not recorded |"):
            self.assertIn(row, md)
        summary = md.split("## Summary")[1].split("\n## ")[0]
        self.assertNotIn("nan", summary)
        self.assertIn("Loss: not recorded by the source.", summary)
        self.assertIn("Overflow flags: not recorded by the source", summary)
        self.assertIn("**param-not-synced** on rank(s)", md.split("## First mismatch")[1].split("\n## ")[0])
        self.assertIn("Cursor and heatmaps at step %d (the first finding, param-not-synced)." % f[0]["first_step"],
                      md)
        with open(os.path.join(out, "steps.csv"), encoding="utf-8") as fh:
            rows = fh.read().splitlines()
        for row in rows[1:]:
            self.assertEqual(row.split(",")[2:], [""] * 7, row)  # nothing per step but the statistics
        inspect = self.cli("inspect", path).stdout
        self.assertIn("model           not recorded", inspect)
        self.assertIn("cluster         4 ranks x batch not recorded, not recorded, loss scale not recorded", inspect)
        self.assertIn("first mismatch  gradient step not recorded, weight step not recorded", inspect)

    def test_older_header_and_micro_steps_import_alike(self):
        for name, options in (("legacy", ("--legacy-header",)), ("micro", ("--micro-steps", "3"))):
            path, out = self.imported(name, *options)
            self.assertIn("12 steps, 6 parameters", out)
            self.assertEqual(self.diagnosis(path)["findings"], [], name)
        self.assertIn("last micro step", self.imported("micro2", "--micro-steps", "2")[1])

    def check(self, mistake, cause, ranks=None, parameters=None, layout="v1"):
        path, _ = self.imported("%s-%s" % (layout, mistake), "--mistake", mistake, "--layout", layout)
        f = self.diagnosis(path)["findings"]
        self.assertEqual([x["cause"] for x in f], [cause], json.dumps(f, indent=1))
        if ranks is not None:
            self.assertEqual(f[0]["ranks"], ranks)
        if parameters is not None:
            self.assertEqual(f[0]["parameters"], parameters)
        return f[0]

    def test_a_parameter_never_all_reduced(self):
        f = self.check("param-not-synced", "param-not-synced", parameters=["layers.0.attention.dense.bias"])
        self.assertIn("equal to the file's rounding", f["evidence"])
        self.assertRegex(f["evidence"], r"on [1-9]\d* of those its synced sum equals each rank's own local sum")

    def test_gradients_summed_instead_of_averaged(self):
        self.check("grad-sum", "grad-sum")

    def test_every_rank_reading_the_same_batches(self):
        f = self.check("shard-overlap", "shard-overlap", ranks=[0, 1, 2, 3])
        self.assertIn("records no sample ids", f["evidence"])

    def test_weights_that_differ_before_the_first_update(self):
        f = self.check("init-mismatch", "init-mismatch", ranks=[0, 3])
        self.assertEqual(f["first_step"], 0)
        self.assertIn("weight norms as recorded", f["evidence"])

    def test_monitor_v2_tree_imports_and_has_no_findings(self):
        path, out = self.imported("v2-clean", "--layout", "v2")
        self.assertIn("4 ranks, 12 steps, 6 parameters from 24 csv files of msprobe Monitor V2", out)
        self.assertIn("not imported (no run-file column holds them): cc (communication operators), module "
                      "(forward and backward activations), optimizer (exp_avg, exp_avg_sq)", out)
        self.assertIn("Monitor V2 prints no tensor shapes", out)
        j = json.loads(self.cli("inspect", path, "--json").stdout)
        self.assertEqual((j["source"], j["world_size"], j["steps_recorded"], j["parameter_tensors"]),
                         ("msprobe", 4, 12, 6))
        for absent in ("/grads/local_sum", "/grads/synced_sum", "/grads/synced_fp"):
            self.assertIn(absent, j["absent"])
        for recorded in ("/grads/local_norm", "/grads/local_max", "/grads/nonfinite", "/grads/synced_norm",
                         "/weights/norm"):
            self.assertNotIn(recorded, j["absent"])
        self.assertEqual(self.diagnosis(path)["findings"], [])

    def test_monitor_v2_mistakes_are_named(self):
        """The same mistakes as V1's, in V2's layout (full precision, no shapes), but grad-sum, which needs the
        sums that shapes give."""
        f = self.check("param-not-synced", "param-not-synced", parameters=["layers.0.attention.dense.bias"],
                       layout="v2")
        self.assertRegex(f["evidence"], r"on [1-9]\d* of those every rank's synced value is its own \(the source "
                                        r"recorded no gradient sums")
        # V2 prints no shapes, so no gradient sums: the arithmetic check says it could not run, never "clean".
        path, _ = self.imported("v2-grad-sum", "--mistake", "grad-sum", "--layout", "v2")
        d = self.diagnosis(path)
        self.assertEqual(d["findings"], [])
        arithmetic = [c for c in d["not_run"] if "grad-sum" in c["causes"]]
        self.assertEqual(len(arithmetic), 1, d["not_run"])
        self.assertIn("no local gradient sums (/grads/local_sum)", arithmetic[0]["reason"])
        self.check("shard-overlap", "shard-overlap", ranks=[0, 1, 2, 3], layout="v2")
        self.assertEqual(self.check("init-mismatch", "init-mismatch", ranks=[0, 3], layout="v2")["first_step"], 0)

    def test_monitor_v2_micro_batches_import_the_last(self):
        path, out = self.imported("v2-micro", "--layout", "v2", "--micro-steps", "3")
        self.assertIn("last micro step", out)
        self.assertEqual(self.diagnosis(path)["findings"], [])

    def test_monitor_v1_alerts_become_events(self):
        path, out = self.imported("alerts", "--anomalies")
        self.assertIn("note: 2 alerts of the monitor (anomaly_detected/) imported as MONITOR_ANOMALY events", out)
        csv_dir = os.path.join(self.dir.name, "alerts-csv")
        p = self.cli("export-csv", path, "--out", csv_dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(csv_dir, "events.csv"), encoding="utf-8") as fh:
            rows = [r for r in fh.read().splitlines() if "MONITOR_ANOMALY" in r]
        self.assertEqual(len(rows), 2, rows)
        self.assertIn("Rule AnomalyNan reports anomaly signal in", rows[0])

    def test_dp_group_set_imports_with_a_note(self):
        path, out = self.imported("dp", "--dp-group")
        self.assertIn("only rank 0 wrote reduced gradients", out)
        d = self.diagnosis(path)
        self.assertEqual(d["findings"], [])
        agreement = [c for c in d["not_run"] if c["check"] == "synced gradient agreement"]
        self.assertEqual(len(agreement), 1, d["not_run"])
        self.assertIn("dp_group", agreement[0]["reason"])

    def test_broken_trees_exit_2_naming_file_and_line_and_write_nothing(self):
        cases = {
            "bad-number": ("rank2-1a2b3c02/grad_unreduced_5-9.csv:4: column 'norm': '1.2.3' is not a number"),
            "missing-column": ("rank2-1a2b3c02/grad_unreduced_5-9.csv:1: no 'step' column"),
            "mixed-steps": ("rank2-1a2b3c02/grad_unreduced_5-9.csv:32: step 11 is outside the file's range 5-9"),
            "ragged-row": ("rank2-1a2b3c02/grad_unreduced_5-9.csv:32: 4 fields, the header has 11"),
            "two-folders": ("two folders for rank 1: Dec01_12-00-01-rank1-1a2b3c01 and "
                            "Dec01_13-00-00-rank1-deadbeef"),
            "bad-anomaly": "anomaly_detected/rank2/anomaly.json: not JSON",
            "v2:bad-number": "rank_2/weight_grad_step5-9.csv:4: column 'min': '1.2.3' is not a number",
            "v2:missing-rank": "no folder for rank 1 (rank folders found: 0, 2, 3)",
            "v2:both-layouts": "holds both Monitor V1 rank folders",
        }
        for case, expected in cases.items():
            layout, broken = case.split(":") if ":" in case else ("v1", case)
            src = self.tree("broken-%s-%s" % (layout, broken), "--broken", broken, "--layout", layout)
            out = os.path.join(self.dir.name, "broken-%s-%s.h5" % (layout, broken))
            p = self.cli("import-msprobe", src, "--out", out)
            self.assertEqual(p.returncode, 2, broken)
            lines = p.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn(expected, lines[0])
            self.assertEqual(glob.glob(out + "*"), [], broken)

    def test_not_a_monitor_folder_and_an_existing_output(self):
        p = self.cli("import-msprobe", self.dir.name, "--out", os.path.join(self.dir.name, "x.h5"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("no msprobe monitor rank folders", p.stderr)
        path, _ = self.imported("again")
        before = os.path.getmtime(path)
        p = self.cli("import-msprobe", os.path.join(self.dir.name, "again"), "--out", path)
        self.assertEqual(p.returncode, 2)
        self.assertIn("already exists (--force replaces it)", p.stderr)
        self.assertEqual(os.path.getmtime(path), before)
        p = self.cli("import-msprobe", os.path.join(self.dir.name, "again"), "--out", path, "--force", "--quiet")
        self.assertEqual((p.returncode, p.stdout), (0, ""))


if __name__ == "__main__":
    unittest.main()
