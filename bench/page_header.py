"""The header line every page a bench script writes starts with: when, at which commit, on what machine, and
the command that wrote it (the project's rule for pages that hold figures)."""

import datetime
import os
import platform
import subprocess


def measured(command):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    return "Measured %s UTC at commit %s on %s (%d cores, %s); written by `%s`." % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), commit, cpu, os.cpu_count(), platform.platform(),
        command)
