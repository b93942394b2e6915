"""Run a child process with a wall-clock limit; it never outlives its time or gsme.

The command runs under a small reaper process that leads its own process group: on a
timeout the whole group is killed, and if gsme itself dies (even by ``kill -9``) the
reaper is signalled by the kernel (Linux ``PR_SET_PDEATHSIG``), kills the group, and
removes the folder it was told to clean up. Without that, a killed run would leave trial
processes running, reparented to init, with their output folders.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Completed:
    """How a limited child process ended.

    ``returncode`` is None when the process was killed for exceeding its time limit;
    ``stderr`` holds at most the last ``MAX_STDERR`` characters.
    """

    returncode: int | None
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        """True when the process was killed at its time limit."""
        return self.returncode is None


MAX_STDERR = 4000

_REAPER = r"""
import ctypes, os, shutil, signal, subprocess, sys
parent, cleanup = int(os.environ.pop("GSME_PARENT_PID")), os.environ.pop("GSME_CLEANUP", "")
def stop(*_):
    if cleanup:
        shutil.rmtree(cleanup, ignore_errors=True)
    os.killpg(0, signal.SIGKILL)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, stop)
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass  # not Linux: the timeout still holds
if os.getppid() != parent:
    stop()  # gsme died before the signal was armed
try:
    code = subprocess.Popen(sys.argv[1:]).wait()
except OSError as err:
    sys.stderr.write(f"cannot start {sys.argv[1]!r}: {err}\n")
    sys.exit(127)
if code < 0:  # end the same way, so the caller sees the child's signal
    if -code != signal.SIGKILL:
        signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def run_limited(
    argv: Sequence[str],
    *,
    timeout_s: float,
    env: Mapping[str, str],
    cwd: str | Path | None = None,
    stdin: str | None = None,
    cleanup: str | Path | None = None,
) -> Completed:
    """Run ``argv`` (no shell) in its own session; kill the session after ``timeout_s``.

    Standard output is discarded: children report through files they write. ``cleanup``
    is a folder removed if gsme dies while the command runs.

    Raises
    ------
    OSError
        When the executable cannot be started (missing, not executable).
    """
    argv = list(argv)
    _require_executable(argv[0], env.get("PATH"), cwd)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _REAPER, *argv],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**env, "GSME_PARENT_PID": str(os.getpid()), "GSME_CLEANUP": str(cleanup or "")},
        cwd=cwd,
        text=True,
        start_new_session=True,
    )
    try:
        _, err = proc.communicate(stdin, timeout=timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        _, err = proc.communicate()
        code = None
    return Completed(code, (err or "")[-MAX_STDERR:], time.perf_counter() - start)


def _require_executable(name: str, path: str | None, cwd) -> None:
    """Raise OSError unless ``name`` starts a program (as ``execvpe`` would find it)."""
    if "/" not in name:
        if shutil.which(name, path=path) is None:
            raise FileNotFoundError(f"no executable {name!r} on PATH")
        return
    target = Path(name) if Path(name).is_absolute() else Path(cwd or ".") / name
    if not target.is_file():
        raise FileNotFoundError(f"no such file: {target}")
    if not os.access(target, os.X_OK):
        raise PermissionError(f"{target} is not executable")


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group ended between the timeout and the kill
        pass
    proc.wait()
