"""`ranksight-cli import-msprobe` on trees of msprobe's dump tool (step<N>/rank<R>/dump.json, task statistics)
that tests/msprobe/make_msprobe_dump.py writes from a real small model trained data-parallel: parameter
gradients become each rank's local gradients, parameters at the forward the weights, every API's and
module's input and output the /tensors rows; NaN and Infinity tokens are read as what they stand for.
The folders as msprobe leaves them import: rank<R>, the bare `rank`, proc<pid>, steps whose rank sets differ and
a subset of ranks (a rank without a dump is NaN there: not recorded), litter beside the dump (left out with a
note); arguments that are null, nested lists, {type, value} pairs and process groups. A broken tree exits 2
with one line naming the file and writes nothing. Run from ctest (py_msprobe_dump)."""

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
        cls.stdouts = {}

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
        if name not in self.stdouts:
            p = self.cli("import-msprobe", src, "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.stdouts[name] = p.stdout
        self.last_stdout = self.stdouts[name]  # what the import of this tree printed, even when done before
        return out

    def config(self, out):
        with h5py.File(out, "r") as f:
            return json.loads(text(f.attrs["config"]))

    def test_clean_dump(self):
        out = self.imported("clean")
        self.assertIn("4 ranks, 3 steps, 6 parameters from 12 dump.json files of msprobe dump (statistics, level "
                      "mix)", self.last_stdout)
        self.assertNotIn("csv", self.last_stdout)
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
        for note in self.config(out)["notes"]:
            self.assertNotRegex(note, r"/(grads|steps|weights|tensors)/", "notes in words, not dataset paths")
        p = self.cli("diagnose", out, "--json")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(json.loads(p.stdout)["findings"], [])

    def tensor_rows(self, out, prefix):
        """{(step, rank): Norm} of the /tensors rows named `prefix`."""
        with h5py.File(out, "r") as f:
            names = [text(n) for n in f["/tensors/name"][:]]
            step, rank, norm = f["/tensors/step"][:], f["/tensors/rank"][:], f["/tensors/norm"][:]
        return {(int(step[i]), int(rank[i])): float(norm[i]) for i, n in enumerate(names) if n == prefix}

    def test_arguments_null_nested_typed_and_a_process_group(self):
        """dist.all_reduce(loss, op=SUM, group=group): the tensor before (each rank's loss) and after (the sum)
        import, the process group, reduce op and bool beside it do not; a null kwarg and nested {type, value}
        lists (conv2d's stride) leave the tensors' names as msprobe numbers them."""
        out = self.imported("clean")
        before = self.tensor_rows(out, "Distributed.all_reduce.0.forward.input_args.0")
        after = self.tensor_rows(out, "Distributed.all_reduce.0.forward.output.0")
        self.assertEqual(sorted(before), [(s, r) for s in range(3) for r in range(4)])
        for s in range(3):
            losses = [before[(s, r)] for r in range(4)]
            self.assertGreater(len(set(losses)), 1, "each rank's own loss before the all-reduce")
            for r in range(4):
                self.assertAlmostEqual(after[(s, r)], sum(losses), places=4)  # 0-dim: Norm is the value
        with h5py.File(out, "r") as f:
            names = {text(n) for n in f["/tensors/name"][:]}
        self.assertFalse([n for n in names if "input_kwargs.group" in n or ".output.2" in n and "all_reduce" in n])
        self.assertNotIn("Functional.cross_entropy.0.forward.input_kwargs.weight", names)
        self.assertIn("Functional.cross_entropy.0.forward.input_args.1", names)  # labels, after the logits
        self.assertIn("Functional.conv2d.0.forward.input_args.2", names)  # bias; stride etc. follow, not tensors
        self.assertFalse([n for n in names if n.startswith("Functional.conv2d.0.forward.input_args.3")])

    def test_nan_on_one_rank_is_where_it_starts(self):
        out = self.imported("nan", "--mistake", "nan@1:3")
        with h5py.File(out, "r") as f:
            step, rank = f["/tensors/step"][:], f["/tensors/rank"][:]
            norm, order = f["/tensors/norm"][:], f["/tensors/order"][:]
            names = np.array([text(n) for n in f["/tensors/name"][:]])
            # A statistic msprobe wrote null (an empty tensor's, a bool tensor's Norm) is NaN and not recorded.
            norm_recorded = (f["/tensors/recorded"][:] & 8) > 0
            self.assertTrue(np.isnan(norm[~norm_recorded]).all(), "not recorded: NaN, never 0")
            bad = ~np.isfinite(norm) & norm_recorded
            self.assertFalse(bad[step == 0].any(), "step 0 is clean")
            self.assertTrue(bad[(step == 1) & (rank == 3)].any())
            # On the other ranks only the logged loss's all-reduce carries rank 3's NaN, in its sum.
            others = set(names[bad & (step == 1) & (rank != 3)])
            self.assertEqual(others, {"Distributed.all_reduce.0.forward.output.0"})
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
            self.assertTrue(np.isfinite(f["/grads/local_norm"][:]).all())
        self.assertEqual(self.config(out)["rank_folders"], ["rank"])
        out = self.imported("l1", "--level", "L1", "--ranks", "2", "--steps", "2")
        self.assertIn("level L1 records no parameter gradients", self.last_stdout)
        self.assertIn("parameters not recorded from 4 dump.json files", self.last_stdout)
        self.assertNotIn("0 parameters", self.last_stdout)
        with h5py.File(out, "r") as f:
            self.assertGreater(f["/tensors/step"].shape[0], 0)

    def same_gradients(self, a, b):
        """The same local gradients (parameter by name) and tensor statistics in two imports."""
        with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
            na, nb = ([text(n) for n in f["/params/name"][:]] for f in (fa, fb))
            self.assertEqual(sorted(na), sorted(nb))
            order = [na.index(n) for n in nb]
            np.testing.assert_array_equal(fa["/grads/local_norm"][:][:, :, order], fb["/grads/local_norm"][:])
            np.testing.assert_array_equal(fa["/tensors/norm"][:], fb["/tensors/norm"][:])

    def test_proc_folders(self):
        """proc<pid>: msprobe's folder while the process has no distributed rank (service.py; renamed rank<R>
        when the rank turns up). One per step: rank 0 of a one-process job. Several (processes without a
        process group): numbered by process id, the same process at every step."""
        one = self.imported("proc1", "--rank-folder", "proc", "--ranks", "1", "--steps", "2")
        self.same_gradients(one, self.imported("num1", "--ranks", "1", "--steps", "2"))
        self.assertEqual(self.config(one)["rank_folders"], ["proc%d" % make_msprobe_dump.PROC_PID])
        three = self.imported("proc3", "--rank-folder", "proc", "--ranks", "3", "--steps", "2")
        self.assertIn("3 processes dumped without a distributed rank", self.last_stdout)
        self.same_gradients(three, self.imported("num3", "--ranks", "3", "--steps", "2"))

    def test_proc_at_step_0_then_rank_folders(self):
        """debugger.start() before torch.distributed: step 0 stays proc<pid>, later steps are rank<R>."""
        one = self.imported("late1", "--rank-folder", "late", "--ranks", "1", "--steps", "2")
        self.same_gradients(one, self.imported("num1", "--ranks", "1", "--steps", "2"))
        two = self.imported("late2", "--rank-folder", "late", "--ranks", "2", "--steps", "3")
        self.assertIn("step 0: folder 'proc%d' was written before the process had its rank" %
                      make_msprobe_dump.PROC_PID, self.last_stdout)
        with h5py.File(two, "r") as f:
            self.assertEqual(list(f["/steps/step"][:]), [1, 2], "step 0's ranks are not known: left out")
            self.assertEqual(f.attrs["world_size"], 2)
            self.assertTrue(np.isfinite(f["/grads/local_norm"][:]).all())
            self.assertNotIn(0, set(f["/tensors/step"][:]))

    def test_steps_whose_rank_sets_differ(self):
        out = self.imported("drop", "--drop", "1:1", "--drop", "2:3", "--drop", "2:1")
        self.assertIn("4 ranks, 3 steps, 6 parameters from 9 dump.json files", self.last_stdout)
        self.assertIn("rank 1 is not recorded at steps 1, 2", self.last_stdout)
        self.assertIn("rank 3 is not recorded at step 2", self.last_stdout)
        missing = {(1, 1), (2, 1), (2, 3)}
        with h5py.File(out, "r") as f:
            local, weights = f["/grads/local_norm"][:], f["/weights/norm"][:]
            steps, ranks = f["/tensors/step"][:], f["/tensors/rank"][:]
            for s in range(3):
                for r in range(4):
                    recorded = (s, r) not in missing
                    self.assertEqual(np.isfinite(local[s, r]).all(), recorded, (s, r))
                    self.assertEqual(np.isnan(local[s, r]).all(), not recorded, (s, r))
                    self.assertEqual(np.isnan(weights[s, r]).all(), not recorded, (s, r))
                    self.assertEqual(((steps == s) & (ranks == r)).any(), recorded, (s, r))
        # The same values as the whole tree where a rank is there.
        with h5py.File(self.imported("clean"), "r") as f:
            whole = f["/grads/local_norm"][:]
        keep = np.isfinite(local)
        np.testing.assert_array_equal(local[keep], whole[keep])
        d = json.loads(self.cli("diagnose", out, "--json").stdout)
        self.assertEqual(d["findings"], [], "a rank that was not recorded is no evidence")

    def test_a_subset_of_ranks(self):
        """msprobe's config "rank": [1, 3]: only those ranks dump; the others are not recorded, never clean."""
        out = self.imported("subset", "--only-ranks", "1,3")
        self.assertIn("4 ranks, 3 steps, 6 parameters from 6 dump.json files", self.last_stdout)
        self.assertIn("ranks 0, 2 have no dump at any step", self.last_stdout)
        with h5py.File(out, "r") as f:
            local = f["/grads/local_norm"][:]
            self.assertTrue(np.isnan(local[:, [0, 2]]).all())
            self.assertTrue(np.isfinite(local[:, [1, 3]]).all())
            self.assertEqual(set(f["/tensors/rank"][:]), {1, 3})
        self.assertEqual(self.config(out)["rank_folders"], [None, "rank1", None, "rank3"])
        out = self.imported("subset23", "--only-ranks", "2,3", "--ranks", "4", "--steps", "2")
        with h5py.File(out, "r") as f:
            self.assertEqual(f.attrs["world_size"], 4)
            self.assertTrue(np.isnan(f["/grads/local_norm"][:, :2]).all())

    def test_litter_beside_the_dump(self):
        out = self.imported("litter", "--ranks", "2", "--steps", "2", "--litter", "step-folder", "--litter",
                            "stray-folder", "--litter", "no-dump")
        for words in ("folder 'stepX' is not step<N>: left out",
                      "step 1: folder 'step1' is not a rank folder",
                      "step 1: folder 'rank1' holds no dump.json: not recorded there",
                      "rank 1 is not recorded at step 1"):
            self.assertIn(words, self.last_stdout)
        with h5py.File(out, "r") as f:
            self.assertEqual(list(f["/steps/step"][:]), [0, 1])
            local = f["/grads/local_norm"][:]
            self.assertTrue(np.isnan(local[1, 1]).all() and np.isfinite(local[0]).all())
            self.assertTrue(np.isfinite(local[1, 0]).all())

    def test_a_statistic_written_as_text(self):
        """MindSpore's graph-mode dump keeps a csv cell it cannot turn into a number: that statistic is not
        recorded, the others of the tensor are, and the note says which."""
        out = self.imported("text", "--ranks", "2", "--steps", "2", "--text-stat")
        self.assertIn("1 statistic written as text that is no number ('Norm' of Functional.conv2d.0.forward is "
                      "\"N/A\" in step0/rank0/dump.json): not recorded", self.last_stdout)
        with h5py.File(out, "r") as f:
            names = [text(n) for n in f["/tensors/name"][:]]
            step, rank, rec = f["/tensors/step"][:], f["/tensors/rank"][:], f["/tensors/recorded"][:]
            norm = f["/tensors/norm"][:]
        i = [k for k, n in enumerate(names)
             if n == "Functional.conv2d.0.forward.input_args.0" and step[k] == 0 and rank[k] == 0][0]
        self.assertEqual(rec[i], 7, "Max, Min, Mean recorded; Norm not")
        self.assertTrue(np.isnan(norm[i]))

    def test_summary_modes(self):
        """summary_mode md5 adds a crc32 beside the statistics: the same import as statistics alone. xor writes a
        checksum in place of them: the tensors import with nothing recorded, the gradient and weight norms are
        listed absent, and the note says why."""
        md5 = self.imported("md5", "--summary-mode", "md5")
        self.same_gradients(md5, self.imported("clean"))
        xor = self.imported("xor", "--summary-mode", "xor", "--ranks", "2", "--steps", "2")
        self.assertIn("the parameter gradients carry no statistics", self.last_stdout)
        with h5py.File(xor, "r") as f:
            absent = text(f.attrs["absent"]).split(",")
            for col in ("/grads/local_norm", "/grads/local_max", "/grads/local_sum", "/weights/norm"):
                self.assertIn(col, absent)
            self.assertEqual({text(n) for n in f["/params/name"][:]}, PARAMS, "names and shapes still read")
            self.assertTrue((f["/tensors/recorded"][:] == 0).all())
            self.assertTrue(np.isnan(f["/tensors/norm"][:]).all())
            self.assertTrue(np.isnan(f["/grads/local_norm"][:]).all())

    def test_mindspore_dump(self):
        """MindSpore's dump of the same run: Cell.<name> entries, mindspore.Tensor dicts with layouts, the
        group a string. The same gradients, weights and tensor statistics import, under the Cell names."""
        ms = self.imported("mindspore", "--framework", "mindspore", "--ranks", "2", "--steps", "2")
        self.assertIn("2 ranks, 2 steps, 6 parameters from 4 dump.json files", self.last_stdout)
        self.same_gradients(ms, self.imported("pt2", "--ranks", "2", "--steps", "2"))
        with h5py.File(ms, "r") as f:
            self.assertEqual({text(n) for n in f["/params/name"][:]}, PARAMS)
            self.assertTrue(np.isfinite(f["/weights/norm"][:]).all())
            names = {text(n) for n in f["/tensors/name"][:]}
            self.assertEqual({text(d) for d in f["/tensors/dtype"][:]} - {"Float32", "Int64", "Bool"}, set())
        self.assertIn("Cell.conv1.Conv2d.forward.0.output.0", names)
        self.assertFalse([n for n in names if n.startswith("Module.") or ".layout" in n])
        self.assertEqual(self.config(ms)["framework"], "mindspore")

    def test_a_shape_that_is_no_list_of_dimensions(self):
        """A tensor's shape as text or a list holding text: its statistics import, its shape is not recorded. A
        parameter gradient's: the parameter's shape comes from the other dumps and its gradient still counts."""
        out = self.imported("shape", "--ranks", "2", "--steps", "2", "--odd-shape", "text", "--odd-shape", "list",
                            "--odd-shape", "param")
        self.assertIn("3 tensors with a shape that is no list of dimensions ('shape' of "
                      "Functional.conv2d.0.forward is \"[4, x]\" in step0/rank0/dump.json)", self.last_stdout)
        self.same_gradients(out, self.imported("pt2", "--ranks", "2", "--steps", "2"))
        with h5py.File(out, "r") as f:
            names = [text(n) for n in f["/tensors/name"][:]]
            shapes = [text(n) for n in f["/tensors/shape"][:]]
            step, rank = f["/tensors/step"][:], f["/tensors/rank"][:]
            self.assertEqual({text(n) for n in f["/params/name"][:]}, PARAMS)
        first = [k for k, n in enumerate(names)
                 if n == "Functional.conv2d.0.forward.input_args.0" and step[k] == 0]
        self.assertEqual([shapes[k] for k in first if rank[k] == 0], ["not recorded"])
        self.assertEqual([shapes[k] for k in first if rank[k] == 1], ["4x3x8x8"])

    def test_broken_trees_exit_2_naming_the_file(self):
        for broken, words in (("bad-json", ["step0/rank0/dump.json", "not JSON"]),
                              ("not-an-object", ["step0/rank0/dump.json", "expected an object"]),
                              ("no-data", ["step0/rank0/dump.json", "no 'data'"]),
                              ("mixed-task", ["step1/rank0/dump.json", "task 'tensor'"])):
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
