"""The recorder installs where PyTorch users work: `pip install ./python` into a virtual environment made with
Debian's venv and pip (--system-site-packages: numpy, h5py and torch from the system; --no-build-isolation
and --no-index: nothing downloaded), then the DDP example, copied out of the repository so that it cannot
reach python/ by its relative path, runs from the venv and writes a run file RankSight opens. Run from ctest
(py_install) with RANKSIGHT_CLI."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CLI = os.environ.get("RANKSIGHT_CLI", "")


@unittest.skipUnless(CLI, "needs RANKSIGHT_CLI")
class InstallTest(unittest.TestCase):
    def install(self, tmp, **pip_env):
        """A venv in tmp with ./python pip-installed into it: (its python, its folder, an environment without
        the source tree's package or kernel)."""
        venv = os.path.join(tmp, "venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], check=True, timeout=120)
        py = os.path.join(venv, "bin", "python")
        # A copy of python/ so the build leaves nothing in the source tree.
        src = os.path.join(tmp, "src")
        shutil.copytree(os.path.join(ROOT, "python"), src, ignore=shutil.ignore_patterns("__pycache__"))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RANKSIGHT_GRADSTATS_LIB")}
        env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
        p = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", src],
                           capture_output=True, text=True, timeout=300, env=dict(env, **pip_env))
        self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
        return py, venv, env

    def test_pip_install_into_a_venv_and_record_a_job(self):
        with tempfile.TemporaryDirectory() as tmp:
            py, venv, env = self.install(tmp)
            where = subprocess.run([py, "-c", "import ranksight.ddp, os; print(os.path.realpath(ranksight.__file__))"],
                                   capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
            self.assertEqual(where.returncode, 0, where.stderr)
            self.assertTrue(where.stdout.strip().startswith(os.path.realpath(venv)), where.stdout)
            # pip built the native statistics kernel (a C compiler is there) and the package loads it.
            kernel = subprocess.run([py, "-c", "import ranksight.gradstats as g; print(*g.kernel_info())"],
                                    capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
            self.assertEqual(kernel.stdout.split()[:1], ["native"], kernel.stdout + kernel.stderr)
            self.assertTrue(os.path.realpath(kernel.stdout.split()[1]).startswith(os.path.realpath(venv)), kernel.stdout)
            # The package's version is the project's (CMakeLists.txt), so the two cannot drift.
            with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as fh:
                project = re.search(r"project\(RankSight VERSION ([0-9.]+)", fh.read()).group(1)
            version = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('ranksight'))"],
                                     capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
            self.assertEqual(version.stdout.strip(), project, version.stderr)
            example = os.path.join(tmp, "job", "pytorch_ddp.py")
            os.makedirs(os.path.dirname(example))
            shutil.copy(os.path.join(ROOT, "examples", "pytorch_ddp.py"), example)
            out = os.path.join(tmp, "job.h5")
            p = subprocess.run([py, example, "--out", out, "--ranks", "2", "--steps", "4"], capture_output=True,
                               text=True, timeout=300, env=env, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stderr[-2000:])
            j = json.loads(subprocess.run([CLI, "inspect", out, "--json"], capture_output=True, text=True,
                                          timeout=120).stdout)
            self.assertEqual((j["source"], j["world_size"], j["steps_recorded"]), ("pytorch-ddp", 2, 4))

    def test_without_a_c_compiler_it_installs_and_uses_torch(self):
        # The native statistics kernel is optional: with no working C compiler pip still installs the package,
        # and the recorder computes its statistics with torch ops, and says so.
        with tempfile.TemporaryDirectory() as tmp:
            py, _, env = self.install(tmp, CC="/bin/false")
            kernel = subprocess.run([py, "-c", "import ranksight.gradstats as g; print(*g.kernel_info())"],
                                    capture_output=True, text=True, timeout=120, env=env, cwd=tmp)
            self.assertEqual(kernel.stdout.split()[:1], ["torch"], kernel.stdout + kernel.stderr)


if __name__ == "__main__":
    unittest.main()
