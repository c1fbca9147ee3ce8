"""`ranksight-cli import-msprobe` on trees written by tests/msprobe/make_msprobe_tree.py in msprobe's layouts
(Monitor V1 and V2): the run file it writes opens, says where it came from and what it lacks, and diagnosis names
the mistake each tree holds (judged to the csv's rounding) or nothing for the clean tree; a broken tree exits
2 with one line naming the file and line, and writes nothing. Run from ctest (py_msprobe) with RANKSIGHT_CLI."""

import csv
import glob
import json
import math
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
        # A note is read by people: it names what was not recorded in words, never as a dataset path.
        for line in p.stdout.splitlines():
            if line.startswith("note: "):
                self.assertNotRegex(line, r"/(steps|grads|weights)/", line)
        return out, p.stdout

    def gradients(self, path):
        """gradients.csv of the run: (step, rank, parameter) -> (local_norm, synced_norm, nonfinite) as text."""
        out = path + "-csv"
        p = self.cli("export-csv", path, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "gradients.csv"), encoding="utf-8", newline="") as fh:
            return {(int(r["step"]), int(r["rank"]), r["parameter"]): (r["local_norm"], r["synced_norm"], r["nonfinite"])
                    for r in csv.DictReader(fh)}

    def written(self, src, prefix):
        """The local-gradient norms the tree's csv files hold, read here as msprobe's users read them
        (pandas-like: a part file's columns are its first file's header): (step, rank, name) -> norm."""
        out = {}
        for folder in glob.glob(os.path.join(src, "*", "*")):
            base = os.path.basename(folder)
            if not os.path.isdir(folder) or base == "anomaly_detected":
                continue
            rank = int(base[5:]) if base.startswith("rank_") else int(base.split("-rank")[1].split("-")[0]) \
                if "-rank" in base else 0
            for f in glob.glob(os.path.join(folder, prefix + "*.csv")):
                head = f.split("_part_")[0] + ".csv" if "_part_" in f else f
                with open(head, newline="") as fh:
                    header = next(csv.reader(fh))
                with open(f, newline="") as fh:
                    rows = list(csv.reader(fh))
                rows = rows[1:] if rows and rows[0] == header else rows
                for row in rows:
                    r = dict(zip(header, row))
                    if r.get("scope", "unreduced") != "unreduced":
                        continue
                    name = r.get("name") or r.get("param_name") or r.get("module_name")
                    out[(int(r["step"]), rank, name)] = float(r["norm"]) if r["norm"] not in ("", "nan") else math.nan
        return out

    def assertNormsAsWritten(self, path, src, prefix):
        """Every local-gradient norm of the run is the one the csv holds (to float32), nan where it holds nan."""
        written = self.written(src, prefix)
        got = self.gradients(path)
        self.assertTrue(written)
        for key, norm in written.items():
            text = got[key][0]
            if math.isnan(norm):
                self.assertEqual(text, "nan", key)
            else:
                self.assertAlmostEqual(float(text), norm, delta=abs(norm) * 1e-6, msg=key)
        return got

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
        self.assertIn("no local gradient sums", arithmetic[0]["reason"])
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
            "part-without-header": ("grad_unreduced_5-9_part_1.csv: a part file without grad_unreduced_5-9.csv"),
            "v2:both-layouts": "holds both Monitor V1 rank folders",
        }
        for case, expected in cases.items():
            layout, broken = case.split(":") if ":" in case else ("v1", case)
            extra = ("--part-rows", "4") if broken == "part-without-header" else ()
            src = self.tree("broken-%s-%s" % (layout, broken), "--broken", broken, "--layout", layout, *extra)
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

    # --- msprobe's trees as each version writes them (tests/msprobe/make_msprobe_tree.py --version ...) ---

    def test_every_monitor_v1_version_imports_its_values(self):
        """1.2.0 (param_name, a nan written as an empty field, param_*.csv), 1.2.2 (name, nan), 8.1 (shape and
        dtype, quoted "[16, 8]" and bare [8]): each run holds the norms the csv holds, a NaN gradient is nan with
        its non-finite count, a tiny one in scientific notation (5e-06) is read as printed."""
        for version in ("1.2.0", "1.2.2", "8.1"):
            src = self.tree("v1-" + version, "--version", version, "--nan-grad", "--tiny-grad")
            with open(glob.glob(os.path.join(src, "monitor_output", "*rank2-*", "grad_unreduced_5-9.csv"))[0]) as fh:
                text = fh.read()
            self.assertIn({"1.2.0": "vpp_stage,param_name,step,", "1.2.2": "vpp_stage,name,step,norm",
                           "8.1": "nans,mean,shape,dtype"}[version], text.splitlines()[0])
            self.assertIn("layers.0.attention.dense.bias,6,%s," % ("" if version == "1.2.0" else "nan"), text)
            self.assertRegex(text, r"final_layernorm\.weight,\d+,\d(\.\d+)?e-0\d,")
            out = os.path.join(self.dir.name, "v1-%s.h5" % version)
            p = self.cli("import-msprobe", src, "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("4 ranks, 12 steps, 6 parameters", p.stdout)
            got = self.assertNormsAsWritten(out, src, "grad_unreduced_")
            self.assertEqual(got[(6, 2, "layers.0.attention.dense.bias")][2], "1")  # nans = 1
            self.assertEqual(got[(6, 1, "layers.0.attention.dense.bias")][2], "0")
            self.assertEqual(got[(6, 2, "layers.0.attention.dense.bias")][1], "nan")  # the mean of a NaN
            self.assertEqual({k[2] for k in got}, {
                "embedding.word_embeddings.weight", "layers.0.attention.dense.weight", "layers.0.attention.dense.bias",
                "layers.0.mlp.dense_h_to_4h.weight", "layers.1.mlp.dense_4h_to_h.weight", "final_layernorm.weight"})
            j = json.loads(self.cli("inspect", out, "--json").stdout)
            self.assertEqual(j["parameters"] is not None, version == "8.1", version)  # sizes only where shapes are printed
            self.assertNotIn("/weights/norm", j["absent"])

    def test_a_single_process_folder_is_rank_0(self):
        path, out = self.imported("single", "--version", "1.2.0", "--single-process")
        self.assertTrue(os.path.isdir(os.path.join(self.dir.name, "single", "monitor_output",
                                                   "Dec01_12-00-00-1a2b3c00")))
        self.assertIn("1 ranks, 12 steps, 6 parameters", out)
        self.assertIn("note: a process that was not distributed (its folder <time>-<id> names no rank): imported as "
                      "rank 0", out)
        self.assertNormsAsWritten(path, os.path.join(self.dir.name, "single"), "grad_unreduced_")

    def test_ops_in_the_users_order(self):
        path, _ = self.imported("ops-order", "--version", "1.2.0", "--ops", "nans,max,norm,min")
        src = os.path.join(self.dir.name, "ops-order")
        with open(glob.glob(os.path.join(src, "monitor_output", "*rank0-*", "grad_unreduced_0-4.csv"))[0]) as fh:
            self.assertEqual(fh.readline().strip(), "vpp_stage,param_name,step,nans,max,norm,min")
        self.assertNormsAsWritten(path, src, "grad_unreduced_")
        j = json.loads(self.cli("inspect", path, "--json").stdout)
        self.assertIn("/grads/local_sum", j["absent"])  # no mean: no sums
        self.assertNotIn("/grads/local_max", j["absent"])

    def test_part_files_l2_hooks_and_optimizer_moments(self):
        """More rows in one write than msprobe's limit: the rows in headerless _part_<k> files, the header alone in
        the first; L2 hook files and exp_avg files (no step 0) are listed as not imported, in words."""
        path, out = self.imported("parts", "--part-rows", "4", "--l2-hooks")
        src = os.path.join(self.dir.name, "parts")
        rank0 = glob.glob(os.path.join(src, "monitor_output", "*rank0-*"))[0]
        self.assertTrue(os.path.exists(os.path.join(rank0, "grad_unreduced_0-4_part_2.csv")))
        with open(os.path.join(rank0, "grad_unreduced_0-4.csv")) as fh:
            self.assertEqual(len(fh.read().splitlines()), 1)
        with open(os.path.join(rank0, "exp_avg_0-4.csv")) as fh:
            self.assertFalse(any(",0," in line[:40] for line in fh.read().splitlines()[1:]))
        self.assertIn("4 ranks, 12 steps, 6 parameters", out)
        self.assertNormsAsWritten(path, src, "grad_unreduced_")
        for words in ("attention_hook (attention entropy and softmax max)",
                      "linear_hook (stable rank and kernel norm of linear layers)",
                      "exp_avg (the optimizer's first moments)", "actv (module activations)"):
            self.assertIn(words, out)
        self.assertEqual(self.diagnosis(path)["findings"], [])

    def test_monitor_v2_as_written(self):
        """CRLF, vpp_stage -1 (one model) or 0 with names 0:<name> (a list of models), cc rows with no vpp_stage,
        weight_grad rows with micro_step, full float32 text: the norms are the csv's and the names its own."""
        for name, options in (("v2-single", ()), ("v2-list", ("--vpp-list",))):
            path, out = self.imported(name, "--layout", "v2", *options)
            src = os.path.join(self.dir.name, name)
            with open(os.path.join(src, "monitor_v2_out", "rank_0", "weight_grad_step0-4.csv"), "rb") as fh:
                raw = fh.read().decode()
            self.assertTrue(raw.startswith("vpp_stage,step,module_name,scope,micro_step,min,max,mean,norm,nans\r\n"))
            self.assertIn("\r\n0,0,0:" if options else "\r\n-1,0,final", raw)
            with open(os.path.join(src, "monitor_v2_out", "rank_0", "cc_step0-4.csv")) as fh:
                self.assertTrue(fh.read().splitlines()[1].startswith(",0,all_reduce"))
            got = self.assertNormsAsWritten(path, src, "weight_grad_")
            prefix = "0:" if options else ""
            self.assertIn((0, 0, prefix + "final_layernorm.weight"), got)
            self.assertFalse(any(k[2].startswith("-1:") for k in got))
            self.assertEqual(self.diagnosis(path)["findings"], [], name)

    def test_monitor_v2_a_statistic_missing_from_some_rows(self):
        path, out = self.imported("v2-nan-column", "--layout", "v2", "--nan-column", "nans")
        self.assertIn("note: every 'nans' of the local (unreduced) gradients is nan", out)
        j = json.loads(self.cli("inspect", path, "--json").stdout)
        self.assertIn("/grads/nonfinite", j["absent"])  # never a count of 0
        self.assertNotIn("/grads/local_norm", j["absent"])
        self.assertEqual(self.gradients(path)[(0, 0, "final_layernorm.weight")][2], "")

    def test_monitor_v2_a_subset_of_ranks(self):
        """The monitor's `rank` setting: only rank_3/ (or ranks 0, 2, 3) written. The ranks present import with
        their values; the others are not recorded (nan), named so by inspect and diagnose, never in agreement."""
        for name, only, missing in (("v2-rank3", "3", [0, 1, 2]), ("v2-rank023", "0,2,3", [1])):
            path, out = self.imported(name, "--layout", "v2", "--only-ranks", only)
            self.assertIn("4 ranks, 12 steps, 6 parameters", out)
            words = ("ranks 0, 1, 2 of 4 have" if len(missing) > 1 else "rank 1 of 4 has")
            self.assertIn("note: %s no folder (the monitor's `rank` setting limits which ranks write)" % words, out)
            got = self.assertNormsAsWritten(path, os.path.join(self.dir.name, name), "weight_grad_")
            for (step, rank, _), (local, synced, nonfinite) in got.items():
                self.assertEqual(rank in missing, local == "nan" and synced == "nan", (step, rank))
                self.assertEqual(nonfinite, "" if rank in missing else "0", (step, rank))  # never a count of 0
            listed = ", ".join(str(r) for r in missing)
            inspect = self.cli("inspect", path).stdout
            self.assertIn("an msprobe Monitor tree: 4 ranks (%s %s not recorded)" %
                          ("ranks" if len(missing) > 1 else "rank", listed), inspect)
            d = self.cli("diagnose", path)
            self.assertEqual(d.returncode, 0, d.stderr)
            self.assertNotIn("the ranks agree", d.stdout)
            self.assertIn("not recorded, not compared", d.stdout)
            d = self.diagnosis(path)
            self.assertEqual(d["findings"], [])
            agreement = [c for c in d["not_run"] if c["check"] == "synced gradient agreement"]
            self.assertIn("a rank the source did not record", agreement[0]["reason"])
        report = self.report(path)
        self.assertIn("found the recorded ranks in agreement (rank 1 not recorded, not compared)", report)
        self.assertNotIn("found the ranks in agreement", report)

    def report(self, path):
        out = path + "-report"
        p = self.cli("report", path, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "report.md"), encoding="utf-8") as fh:
            return fh.read()

    def test_monitor_alerts_as_written(self):
        """call_id -1, msprobe's anomaly_analyse.json beside the rank folders (the same alerts again: counted once),
        the messages' ending kept."""
        path, out = self.imported("alerts-real", "--anomalies", "--call-id-unknown", "--analyse")
        self.assertIn("note: 2 alerts of the monitor (anomaly_detected/) imported as MONITOR_ANOMALY events", out)
        rows = self.events(path)
        self.assertEqual(len(rows), 2, rows)
        self.assertTrue(rows[0].endswith("current value nan, history mean 0.4312.\""), rows[0])
        self.assertTrue(rows[1].endswith("current value 3.52, history mean 0.4312.\""), rows[1])

    def test_a_folder_of_alerts_alone_is_a_run_of_events(self):
        path, out = self.imported("alerts-only", "--alerts-only")
        self.assertEqual(sorted(os.listdir(os.path.join(self.dir.name, "alerts-only", "monitor_output"))),
                         ["anomaly_detected"])
        self.assertIn("4 ranks, 0 steps, parameters not recorded from 2 alert(s) and no statistics files", out)
        self.assertIn("note: only the monitor's alerts (anomaly_detected/): no gradient or weight statistics were "
                      "recorded", out)
        j = json.loads(self.cli("inspect", path, "--json").stdout)
        self.assertEqual((j["world_size"], j["steps_recorded"]), (4, 0))
        for absent in ("/grads/local_norm", "/grads/synced_norm", "/grads/nonfinite", "/weights/norm"):
            self.assertIn(absent, j["absent"])
        self.assertEqual([r.split(",")[:2] for r in self.events(path)], [["7", "1"], ["7", "3"]])
        d = self.cli("diagnose", path)
        self.assertIn("no rank's statistics were recorded, so none were compared", d.stdout)
        self.assertIn("No findings: no rank's statistics were recorded, so none were compared.", self.report(path))
        # anomaly_detected/ itself, and msprobe's analysis alone when no rank's anomaly.json is left
        root = os.path.join(self.dir.name, "alerts-only", "monitor_output", "anomaly_detected")
        p = self.cli("import-msprobe", root, "--out", os.path.join(self.dir.name, "alerts-only-2.h5"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 alerts", p.stdout)
        src = self.tree("analysis-only", "--alerts-only", "--analyse")
        for r in range(4):
            os.remove(os.path.join(src, "monitor_output", "anomaly_detected", "rank%d" % r, "anomaly.json"))
        p = self.cli("import-msprobe", src, "--out", os.path.join(self.dir.name, "analysis-only.h5"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("from anomaly_analyse.json", p.stdout)
        self.assertEqual(len(self.events(os.path.join(self.dir.name, "analysis-only.h5"))), 2)

    def events(self, path):
        out = path + "-events"
        p = self.cli("export-csv", path, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(out, "events.csv"), encoding="utf-8") as fh:
            return [r for r in fh.read().splitlines() if "MONITOR_ANOMALY" in r]


if __name__ == "__main__":
    unittest.main()
