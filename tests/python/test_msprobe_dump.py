"""`ranksight-cli import-msprobe` on trees of msprobe's dump tool (step<N>/rank<R>/dump.json, task statistics)
that tests/msprobe/make_msprobe_dump.py writes from a real small model trained data-parallel: parameter
gradients become each rank's local gradients, parameters at the forward the weights, every API's and
module's input and output the /tensors rows; NaN and Infinity tokens are read as what they stand for; a
broken tree exits 2 with one line naming the file and writes nothing. Run from ctest (py_msprobe_dump)."""

import contextlib
import importlib.util
import io
import json
import math
import os
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GEN = os.path.join(ROOT, "tests", "msprobe", "make_msprobe_dump.py")
CLI = os.environ.get("RANKSIGHT_CLI")
# The generator runs in this process (its main takes argv): torch is imported once for all the trees.
_spec = importlib.util.spec_from_file_location("make_msprobe_dump", GEN)
make_msprobe_dump = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_msprobe_dump)
PARAMS = {"conv1.weight", "conv1.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


@unittest.skipUnless(CLI, "RANKSIGHT_CLI is not set")
class MsprobeDumpTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.trees = {}

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def tree(self, name, *args):
        if name not in self.trees:
            out = os.path.join(self.dir.name, name)
            with contextlib.redirect_stdout(io.StringIO()):
                make_msprobe_dump.main([out, *args])
            self.trees[name] = out
        return self.trees[name]

    def cli(self, *args):
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)

    def imported(self, name, *args):
        src = self.tree(name, *args)
        out = os.path.join(self.dir.name, name + ".h5")
        if not os.path.exists(out):
            p = self.cli("import-msprobe", src, "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.__class__.last_stdout = p.stdout
        return out

    def test_clean_dump(self):
        out = self.imported("clean")
        self.assertIn("4 ranks, 3 steps, 6 parameters from 12 csv files of msprobe dump (statistics, level mix)",
                      self.last_stdout.replace("csv files", "csv files"))
        with h5py.File(out, "r") as f:
            names = {text(n) for n in f["/params/name"][:]}
            self.assertEqual(names, PARAMS)
            absent = text(f.attrs["absent"]).split(",")
            for col in ("/grads/synced_norm", "/grads/synced_sum", "/steps/loss", "/grads/synced_fp"):
                self.assertIn(col, absent)
            local = f["/grads/local_norm"][:]
            self.assertEqual(local.shape, (3, 4, 6))
            self.assertTrue(np.isfinite(local).all() and (local > 0).all())
            self.assertFalse(np.allclose(local[:, 0], local[:, 1]), "each rank's own batch, its own gradient")
            weights = f["/weights/norm"][:]
            self.assertEqual(weights.shape, (3, 4, 6))
            self.assertTrue((weights == weights[:, :1]).all(), "DDP keeps every rank's weights equal")
            names = [text(n) for n in f["/tensors/name"][:]]
            self.assertIn("Module.conv1.Conv2d.forward.0.output.0", names)
            self.assertIn("Functional.relu.0.forward.input_args.0", names)
            self.assertIn("Module.fc2.Linear.backward.0.input.0", names)
            rec = f["/tensors/recorded"][:]
            self.assertTrue((rec[[n.startswith("Torch.nonzero.0.forward.output") for n in names]] == 0).all(),
                            "an empty tensor's statistics are null: not recorded")
        p = self.cli("diagnose", out, "--json")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(json.loads(p.stdout)["findings"], [])

    def test_nan_on_one_rank_is_where_it_starts(self):
        out = self.imported("nan", "--mistake", "nan@1:3")
        with h5py.File(out, "r") as f:
            step, rank = f["/tensors/step"][:], f["/tensors/rank"][:]
            norm, order = f["/tensors/norm"][:], f["/tensors/order"][:]
            names = np.array([text(n) for n in f["/tensors/name"][:]])
            bad = ~np.isfinite(norm)
            self.assertFalse(bad[step == 0].any(), "step 0 is clean")
            self.assertTrue(bad[(step == 1) & (rank == 3)].any())
            self.assertFalse(bad[(step == 1) & (rank != 3)].any(), "the other ranks are clean at step 1")
            first = order[(step == 1) & (rank == 3) & bad].min()
            self.assertEqual(names[(step == 1) & (rank == 3) & (order == first)][0],
                             "Functional.conv2d.0.forward.input_args.0")
            nonfinite = f["/grads/nonfinite"][:]
            self.assertTrue((nonfinite[1, 3] == 1).all() and (nonfinite[1, :3] == 0).all())

    def test_a_parameter_left_out_of_the_all_reduce(self):
        out = self.imported("pns", "--mistake", "param-not-synced@1:2", "--steps", "4")
        with h5py.File(out, "r") as f:
            names = [text(n) for n in f["/params/name"][:]]
            w = f["/weights/norm"][:]
            p = names.index("fc2.bias")
            self.assertTrue((w[:2] == w[:2, :1]).all())
            self.assertNotEqual(w[2, 2, p], w[2, 0, p])
            others = [i for i in range(6) if i != p]
            self.assertTrue((w[:, :, others] == w[:, :1, others]).all())
        d = json.loads(self.cli("diagnose", out, "--json").stdout)
        self.assertTrue(d["findings"], "weights that part across ranks are named")
        self.assertEqual(d["findings"][0]["ranks"], [2])

    def test_older_names_single_rank_and_levels(self):
        out = self.imported("legacy", "--legacy-names", "--ranks", "2", "--steps", "2")
        with h5py.File(out, "r") as f:
            self.assertTrue(np.isfinite(f["/grads/local_norm"][:]).all())
        out = self.imported("one", "--rank-folder", "rank", "--ranks", "1", "--steps", "2")
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["world_size"], 1)
        out = self.imported("l1", "--level", "L1", "--ranks", "2", "--steps", "2")
        self.assertIn("level L1 records no parameter gradients", self.last_stdout)
        with h5py.File(out, "r") as f:
            self.assertGreater(f["/tensors/step"].shape[0], 0)

    def test_broken_trees_exit_2_naming_the_file(self):
        for broken, words in (("bad-json", ["step0/rank0/dump.json", "not JSON"]),
                              ("not-an-object", ["step0/rank0/dump.json", "expected an object"]),
                              ("no-data", ["step0/rank0/dump.json", "no 'data'"]),
                              ("bad-shape", ["step0/rank0/dump.json", "Functional.conv2d.0.forward", "'shape'"]),
                              ("bad-shape-list", ["step0/rank0/dump.json", "'shape' holds"]),
                              ("bad-stat", ["step0/rank0/dump.json", "'Norm' is \"abc\", not a number"]),
                              ("missing-rank", ["step1", "no rank1 folder"]),
                              ("mixed-task", ["step1/rank0/dump.json", "task 'tensor'"]),
                              ("bad-step-folder", ["'stepX' is not step<N>"])):
            with self.subTest(broken=broken):
                src = self.tree("broken-" + broken, "--broken", broken, "--ranks", "2", "--steps", "2")
                out = os.path.join(self.dir.name, "broken.h5")
                p = self.cli("import-msprobe", src, "--out", out)
                self.assertEqual(p.returncode, 2, p.stdout)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                for w in words:
                    self.assertIn(w, lines[0])
                self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
