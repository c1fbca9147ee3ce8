"""The Python run-file writer (python/ranksight/runfile.py) against RankSight's own reader: a file it
writes must pass the C++ reader's validation (every dataset's dims, dtype size and sign, fixed-length
strings) and read back the values written. Run from ctest (py_runfile) with RANKSIGHT_CLI set."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from ranksight.runfile import RunFileWriter  # noqa: E402

CLI = os.environ.get("RANKSIGHT_CLI", "")


def meta(R=2, B=4, K=3):
    return dict(model="smallcnn", world_size=R, batch_per_rank=B, precision="O0", loss_scale="none",
                data="synthetic", seed=7, sketch_dim=K, weight_every=2, planned_steps=6, config={"lr": 0.1},
                rank_table={}, environment={"host": "test", "note": "üñí"}, source="pytorch-ddp",
                params=[("conv.weight", (4, 3, 3, 3)), ("conv.bias", (4,)), ("scale", ())],
                buffer_names=["bn.running_mean"],
                cards=[dict(rank=r, device_ip="127.0.0.1", server_id="localhost") for r in range(R)])


@unittest.skipUnless(CLI, "RANKSIGHT_CLI is not set")
class RunFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "py.h5")

    def tearDown(self):
        self.dir.cleanup()

    def inspect(self, path):
        p = subprocess.run([CLI, "inspect", path, "--json"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_the_reader_accepts_and_reads_back_a_written_run(self):
        m = meta()
        w = RunFileWriter(self.path, m)
        R, P = 2, 3
        for s in range(6):
            fp = np.full((R, P), 1000 + s, dtype=np.uint64)
            if s == 4:
                fp[1, 2] += 1  # rank 1's synced gradient of "scale" differs at step 4
            w.append_step(dict(step=s, epoch=0, lr=0.1, loss=np.full(R, 2.0 - 0.1 * s), accuracy=np.full(R, 0.25),
                               loss_scale=np.ones(R), local_norm=np.ones((R, P)), synced_norm=np.ones((R, P)),
                               synced_fp=fp, sketch=np.zeros((R, P, 3))))
            if s % 2 == 0:
                w.append_weights(s, np.zeros((R, P)), np.ones((R, P)), np.zeros(R), np.zeros(R))
        w.append_event(4, 1, 1, "GRADIENT_SYNC", "Rank 0 and Rank 1 parameter gradient mismatch at step 4")
        w.close("completed")

        j = self.inspect(self.path)
        self.assertEqual(j["format"], "ranksight-run")
        self.assertEqual(j["format_version"], 3)
        self.assertEqual(j["source"], "pytorch-ddp")
        self.assertEqual(j["world_size"], 2)
        self.assertEqual(j["steps_recorded"], 6)
        self.assertTrue(j["complete"])
        self.assertEqual(j["first_grad_mismatch_step"], 4)

    def test_each_column_caches_one_chunk_once_swmr_starts(self):
        # Starting SWMR reopens every dataset with HDF5's default 1 MiB chunk cache, which holds on to every
        # chunk written until it fills: a long job's recorder would grow by what it wrote.
        w = RunFileWriter(self.path, meta())
        try:
            for cols in w.tables.values():
                for ds in cols:
                    nslots, nbytes, w0 = ds.id.get_access_plist().get_chunk_cache()
                    chunk = int(np.prod(ds.chunks)) * ds.dtype.itemsize
                    self.assertEqual(nbytes, chunk + 4096, ds.name)
                    self.assertLess(nbytes, 1 << 20, ds.name)
        finally:
            w.close("completed")

    def test_a_killed_writer_leaves_every_flushed_step(self):
        # A child process writes 3 steps and dies without closing: the file is still open for SWMR writing.
        code = ("import sys, os, numpy as np; sys.path.insert(0, %r); from ranksight.runfile import RunFileWriter;"
                "from test_runfile import meta; w = RunFileWriter(%r, meta());"
                "[w.append_step(dict(step=s, epoch=0, lr=0.1, loss=np.ones(2))) for s in range(3)]; os._exit(0)"
                % (os.path.join(os.path.dirname(__file__), "..", "..", "python"), self.path))
        env = dict(os.environ, PYTHONPATH=os.path.dirname(__file__))
        subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
        j = self.inspect(self.path)
        self.assertEqual(j["steps_recorded"], 3)
        self.assertFalse(j["complete"])


if __name__ == "__main__":
    unittest.main()
