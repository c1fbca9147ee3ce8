"""ranksight.ddp.Recorder(on_finding=...) on real gloo DDP jobs (tests/python/ddp_alert_job.py runs
examples/pytorch_ddp.py's job and mistakes): every rank learns RankSight's verdict at the same step, "raise" stops
every rank there with the run file complete, a clean job runs to its end, and a watch child that fails or says
nothing ends the checks without stopping or hanging the job. Run from ctest (py_ddp_alert) with RANKSIGHT_CLI
set; needs python3-torch."""

import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
CLI = os.environ.get("RANKSIGHT_CLI", "")
# `ranksight-cli watch` names a finding once its run has 2 steps past the finding's first step (kSettleSteps in
# core/diagnose/RunWatcher.h): a parameter left out of the all-reduce looks, on its first step, like a copy
# corrupted after it.
SETTLE = 2
# Every job ends well within this, or it hung: the bound on "no hang".
JOB_TIMEOUT_S = 120

try:
    import torch  # noqa: F401 (the jobs need it)
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

# Stands in for ranksight-cli: "exit2" cannot read the file, "silent" reads its requests and never answers.
FAKE_WATCH = """#!/usr/bin/python3
import os, sys, time
if os.environ["FAKE_WATCH"] == "exit2":
    sys.stderr.write("%s: not a RankSight run file\\n" % sys.argv[2])
    sys.exit(2)
for line in sys.stdin:
    time.sleep(0.01)
"""


@unittest.skipUnless(CLI and HAVE_TORCH, "needs RANKSIGHT_CLI and python3-torch")
class DdpAlertTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def job(self, name, mistake="none", steps=20, ranks=4, on_finding="raise", check_every=5, extra=(), env=None):
        """Runs the job; returns (run file, the ranks' outcomes in rank order)."""
        out = os.path.join(self.dir.name, name + ".h5")
        results = os.path.join(self.dir.name, name)
        environment = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1", **(env or {}))
        p = subprocess.run([sys.executable, os.path.join(HERE, "ddp_alert_job.py"), "--out", out, "--results",
                            results, "--mistake", mistake, "--steps", str(steps), "--ranks", str(ranks),
                            "--on-finding", on_finding, "--check-every", str(check_every), *extra],
                           capture_output=True, text=True, timeout=JOB_TIMEOUT_S, env=environment)
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        outcomes = []
        for r in range(ranks):
            with open(os.path.join(results, "rank%d.json" % r)) as f:
                outcomes.append(json.load(f))
        self.assertNoWatchLeft(outcomes[0]["watch_pid"])
        return out, outcomes

    def assertNoWatchLeft(self, pid):
        """The watch child is gone once the job is (a zombie would be one nobody waited for)."""
        if pid is None:
            return
        try:
            with open("/proc/%d/status" % pid) as f:
                state = [line for line in f if line.startswith("State:")]
        except FileNotFoundError:
            return
        self.fail("watch child %d still there: %s" % (pid, state))

    def inspect(self, path):
        p = subprocess.run([CLI, "inspect", path, "--json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def check_stopped(self, mistake, cause, check_every, steps=20):
        """Every rank raised RankSightAlert for `cause` at the same step: the first check whose rows let watch
        name it (first_step + SETTLE) -- so at most check_every - 1 steps after that row -- and the file is closed
        complete there with the alert as its stop reason."""
        path, outcomes = self.job(mistake + "-raise", mistake, steps=steps, check_every=check_every)
        alerts = [o["alert"] for o in outcomes]
        self.assertTrue(all(alerts), outcomes)
        self.assertEqual({a["cause"] for a in alerts}, {cause}, alerts)
        self.assertEqual(len({a["step"] for a in alerts}), 1, "ranks stopped at different steps: %s" % alerts)
        self.assertEqual(len({json.dumps(a["finding"], sort_keys=True) for a in alerts}), 1, alerts)
        step, first = alerts[0]["step"], alerts[0]["finding"]["first_step"]
        nameable = first + SETTLE
        self.assertEqual((step + 1) % check_every, 0, "not a check step: %d" % step)
        self.assertGreaterEqual(step, nameable)
        self.assertLess(step - check_every, nameable, "the check before (step %d) could have named it" % step)
        self.assertLessEqual(step - first, check_every - 1 + SETTLE)
        self.assertTrue(all(o["steps_recorded"] == step + 1 for o in outcomes), outcomes)
        self.assertIn("RankSight: %s on rank(s)" % cause, alerts[0]["message"])
        self.assertIn("found at step %d" % step, alerts[0]["message"])
        j = self.inspect(path)
        self.assertTrue(j["complete"])
        self.assertEqual(j["stop_reason"], "alert: %s at step %d" % (cause, step))
        self.assertEqual(j["steps_recorded"], step + 1)
        return alerts[0]

    def test_a_bit_flipped_mid_run_stops_every_rank_at_the_first_check_that_sees_it(self):
        # The flip is at step 8 (examples/pytorch_ddp.py SDC_STEP): the check at step 9 has not enough rows
        # after it, the one at step 14 stops the job, 6 steps before its planned end.
        a = self.check_stopped("sdc-after", "sdc-after", check_every=5)
        self.assertEqual((a["finding"]["first_step"], a["step"]), (8, 14))
        self.assertEqual(a["ranks"], [3])

    def test_a_parameter_left_out_of_ddp_stops_every_rank(self):
        # Ranks part from step 0; watch can name it from step 2's row, and the check at step 2 reads that row:
        # the step being checked is in the file (no one-step lag behind the asynchronous gather).
        a = self.check_stopped("not-synced", "param-not-synced", check_every=3, steps=12)
        self.assertEqual((a["finding"]["first_step"], a["step"]), (0, 2))
        self.assertEqual(a["finding"]["parameters"], ["fc.bias"])

    def test_a_clean_job_runs_to_its_end(self):
        path, outcomes = self.job("clean-raise", steps=12, check_every=4)
        self.assertEqual([(o["alert"], o["steps_recorded"], o["warnings"]) for o in outcomes], [(None, 12, [])] * 4)
        j = self.inspect(path)
        self.assertTrue(j["complete"])
        self.assertEqual((j["stop_reason"], j["steps_recorded"]), ("completed", 12))

    def test_a_callable_hears_the_finding_on_every_rank_and_the_job_goes_on(self):
        path, outcomes = self.job("not-synced-call", "not-synced", steps=12, on_finding="call", check_every=5)
        for o in outcomes:
            self.assertIsNone(o["alert"])
            self.assertEqual(o["steps_recorded"], 12)
            # once: the checks stop after a finding
            self.assertEqual([(c["cause"], c["at_step"], c["parameters"]) for c in o["calls"]],
                             [("param-not-synced", 4, ["fc.bias"])])
        self.assertEqual(self.inspect(path)["stop_reason"], "completed")

    def test_warn_warns_once_on_every_rank(self):
        _, outcomes = self.job("same-batches-warn", "same-batches", steps=8, ranks=2, on_finding="warn",
                               check_every=3)
        for o in outcomes:
            self.assertEqual(o["steps_recorded"], 8)
            self.assertEqual(len(o["warnings"]), 1, o["warnings"])
            self.assertTrue(o["warnings"][0].startswith("RankSight: shard-overlap on rank(s) 0,1 from step 0, "
                                                        "found at step 2: "), o["warnings"][0])

    def fake_watch(self):
        path = os.path.join(self.dir.name, "fake-ranksight-cli")
        with open(path, "w") as f:
            f.write(FAKE_WATCH)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path

    def test_a_watch_that_cannot_read_the_file_ends_the_checks_with_its_reason(self):
        path, outcomes = self.job("fake-exit2", steps=6, ranks=2, check_every=2, env={"FAKE_WATCH": "exit2"},
                                  extra=("--watch-cli", self.fake_watch()))
        self.assertEqual([o["steps_recorded"] for o in outcomes], [6, 6])
        self.assertEqual(len(outcomes[0]["warnings"]), 1, outcomes[0]["warnings"])
        self.assertIn("no longer checked from step 1", outcomes[0]["warnings"][0])
        self.assertIn("exited with 2: %s: not a RankSight run file" % path, outcomes[0]["warnings"][0])
        self.assertEqual(outcomes[1]["warnings"], [])
        self.assertEqual(self.inspect(path)["stop_reason"], "completed")

    def test_a_watch_that_never_answers_is_stopped_and_the_job_goes_on(self):
        _, outcomes = self.job("fake-silent", steps=6, ranks=2, check_every=2, env={"FAKE_WATCH": "silent"},
                               extra=("--watch-cli", self.fake_watch(), "--check-timeout", "1"))
        self.assertEqual([o["steps_recorded"] for o in outcomes], [6, 6])
        self.assertEqual(len(outcomes[0]["warnings"]), 1, outcomes[0]["warnings"])
        self.assertIn("gave no verdict in 1 s; it was stopped", outcomes[0]["warnings"][0])

    def test_no_ranksight_cli_is_an_error_on_every_rank(self):
        _, outcomes = self.job("no-cli", steps=4, ranks=2, extra=("--watch-cli", "/nonexistent/ranksight-cli"))
        self.assertIn("/nonexistent/ranksight-cli is not an executable ranksight-cli", outcomes[0]["error"])
        self.assertIn("rank 0 could not start recording: ranksight: on_finding: /nonexistent/ranksight-cli",
                      outcomes[1]["error"])


if __name__ == "__main__":
    unittest.main()
