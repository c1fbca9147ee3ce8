"""ranksight.ddp.Recorder on a real PyTorch DDP job (examples/pytorch_ddp.py: 4 gloo processes on 127.0.0.1,
a small CNN): the file it writes opens in RankSight, and RankSight's diagnosis names the mistake each job
makes, or nothing for the clean job. Run from ctest (py_ddp) with RANKSIGHT_CLI set; needs python3-torch."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CLI = os.environ.get("RANKSIGHT_CLI", "")

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(CLI and HAVE_TORCH, "needs RANKSIGHT_CLI and python3-torch")
class DdpRecorderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def job(self, mistake, steps=20):
        out = os.path.join(self.dir.name, "%s.h5" % mistake)
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1")
        p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "pytorch_ddp.py"), "--out", out,
                            "--ranks", "4", "--steps", str(steps), "--mistake", mistake],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        return out

    def cli(self, *args):
        return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)

    def findings(self, path):
        p = self.cli("diagnose", path, "--json")
        self.assertIn(p.returncode, (0, 3), p.stderr)
        return json.loads(p.stdout)["findings"]

    def test_clean_job_opens_and_has_no_findings(self):
        path = self.job("none", steps=30)
        p = self.cli("inspect", path, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j["world_size"], 4)
        self.assertEqual(j["steps_recorded"], 30)
        self.assertEqual(j["planned_steps"], 30)
        self.assertEqual(j["source"], "pytorch-ddp")
        self.assertTrue(j["complete"])
        self.assertTrue(j["weights_identical"])
        self.assertLess(j["loss_last"], j["loss_first"])  # it learns
        self.assertEqual(self.findings(path), [])

    def check_top(self, mistake, cause, parameter=None, rank=None):
        f = self.findings(self.job(mistake))
        self.assertTrue(f, "no finding for %s" % mistake)
        self.assertEqual(f[0]["cause"], cause, json.dumps(f, indent=1))
        if parameter is not None:
            self.assertEqual(f[0]["parameters"], [parameter])
        if rank is not None:
            self.assertIn(rank, f[0]["ranks"])

    def test_a_parameter_left_out_of_ddp(self):
        self.check_top("not-synced", "param-not-synced", parameter="fc.bias")

    def test_a_checkpoint_loaded_on_one_rank_after_wrapping(self):
        self.check_top("checkpoint-one-rank", "init-mismatch", rank=3)

    def test_every_rank_reads_the_same_batches(self):
        self.check_top("same-batches", "shard-overlap")

    def test_a_hook_that_sums_instead_of_averaging(self):
        self.check_top("sum-hook", "grad-sum")


if __name__ == "__main__":
    unittest.main()
