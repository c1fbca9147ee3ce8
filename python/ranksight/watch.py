"""A job's own `ranksight-cli watch` child: the verdict on the run file it writes, when the job asks for it.

ranksight.ddp.Recorder(on_finding=...) starts one on rank 0 (WatchChild) and asks it every check_every steps.
The child runs `ranksight-cli watch RUN --fail-on WHAT --json --stdin-sync`: each line written to its stdin makes
it read what the file holds now and answer `checked N` (N step rows read), or print the finding as one JSON line
and exit 3. It exits by itself when its stdin closes, so a job that dies leaves no child behind.

Every wait here is bounded: a child that hangs, dies or cannot read the file ends the checks with a note; it
never stops the job.
"""

import json
import os
import select
import shutil
import subprocess
import tempfile
import time


class RankSightAlert(Exception):
    """Raised on every rank at the same step when on_finding="raise" and RankSight names a cause.

    finding: the finding as `ranksight-cli watch --json` gives it (cause, dimension, confidence, first_step,
    ranks, parameters, evidence, fix, steps_read, ...) plus at_step; cause, step (the step whose step() raised),
    ranks: the same, at hand."""

    def __init__(self, finding, step):
        self.finding = finding
        self.cause = finding.get("cause", "")
        self.step = int(step)
        self.ranks = list(finding.get("ranks", []))
        super().__init__(finding_line(finding, step))


class RankSightWarning(UserWarning):
    """What on_finding="warn" warns with, and what a check that had to stop says (filterable on its own)."""


def finding_line(finding, step):
    """One line for a person: the cause, where and since when, when the job learned it, and the evidence."""
    ranks = ",".join(str(r) for r in finding.get("ranks", [])) or "?"
    params = finding.get("parameters") or []
    where = " (%s)" % ", ".join(params) if params else ""
    line = "RankSight: %s on rank(s) %s%s from step %s, found at step %d" % (
        finding.get("cause", "?"), ranks, where, finding.get("first_step", "?"), step)
    if finding.get("evidence"):
        line += ": " + finding["evidence"]
    if finding.get("fix"):
        line += ". Fix: " + finding["fix"]
    return line


def find_cli(watch_cli=None):
    """The ranksight-cli to run: watch_cli, else $RANKSIGHT_CLI, else ranksight-cli on PATH."""
    cli = watch_cli or os.environ.get("RANKSIGHT_CLI") or shutil.which("ranksight-cli")
    if not cli:
        raise RuntimeError("ranksight: on_finding needs ranksight-cli to watch the run: none given (watch_cli=), "
                           "none in $RANKSIGHT_CLI and none on PATH")
    if not (os.path.isfile(cli) and os.access(cli, os.X_OK)):
        raise RuntimeError("ranksight: on_finding: %s is not an executable ranksight-cli" % cli)
    return cli


class WatchChild:
    """`ranksight-cli watch PATH --stdin-sync --json` as a child, asked for a verdict by check()."""

    def __init__(self, cli, path, fail_on="any", timeout_s=60.0):
        self.cli = cli
        self.timeout_s = float(timeout_s)
        # stderr to a file, not a pipe: nobody reads it until the child is gone, and a full pipe would stop it.
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([cli, "watch", path, "--fail-on", fail_on, "--json", "--stdin-sync"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     close_fds=True)
        self._buffer = b""

    def check(self, rows):
        """Asks for the verdict over the `rows` step rows written so far. Returns ("checked", N),
        ("finding", dict) or ("gone", why): the child could not answer and checks should stop."""
        deadline = time.monotonic() + self.timeout_s
        answer = ("checked", 0)
        # An answer over fewer rows than were flushed (the child read the file just before the last row
        # landed) is asked again: the verdict must cover every step written.
        for _ in range(3):
            answer = self._ask(deadline)
            if answer[0] != "checked" or answer[1] >= rows:
                return answer
        return answer

    def _ask(self, deadline):
        try:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            pass  # it exited: it may have printed the alert first (it also polls alone), which _line still reads
        while True:
            line = self._line(deadline)
            if line is None:
                return ("gone", self._why_gone(deadline))
            if line.startswith("checked "):
                try:
                    return ("checked", int(line.split()[1]))
                except (IndexError, ValueError):
                    continue
            if line.startswith("{"):
                try:
                    finding = json.loads(line)
                except ValueError:
                    continue
                if finding.get("alert") == "finding":
                    return ("finding", finding)
            # any other line (a future watch's notice) is not an answer

    def _line(self, deadline):
        """The child's next stdout line, or None at EOF or the deadline."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode("utf-8", "replace").strip()

    def _why_gone(self, deadline):
        if self.proc.poll() is None and time.monotonic() >= deadline:
            self.close()
            return "%s watch gave no verdict in %.0f s; it was stopped" % (self.cli, self.timeout_s)
        try:
            code = self.proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        except subprocess.TimeoutExpired:
            self.close()
            return "%s watch closed its output but did not exit; it was stopped" % self.cli
        return "%s watch exited with %d%s" % (self.cli, code, self._stderr_tail())

    def _stderr_tail(self):
        try:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return ": " + " / ".join(lines[-3:]) if lines else ""

    def close(self):
        """Ends the child: closing its stdin asks it to exit, then it is terminated, then killed."""
        proc = self.proc
        if proc.poll() is None:
            try:
                proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass
            for stop in (lambda: None, proc.terminate, proc.kill):
                stop()
                try:
                    proc.wait(timeout=5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        for f in (proc.stdin, proc.stdout, self._stderr):
            try:
                f.close()
            except (BrokenPipeError, OSError):
                pass


__all__ = ["RankSightAlert", "RankSightWarning", "WatchChild", "find_cli", "finding_line"]
