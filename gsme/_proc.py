"""Run a child process with a wall-clock limit, killing its whole process group on timeout."""

from __future__ import annotations

import os
import signal
import subprocess
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


def run_limited(
    argv: Sequence[str],
    *,
    timeout_s: float,
    env: Mapping[str, str],
    cwd: str | Path | None = None,
    stdin: str | None = None,
) -> Completed:
    """Run ``argv`` (no shell) in its own session; kill the session after ``timeout_s``.

    Standard output is discarded: children report through files they write.

    Raises
    ------
    OSError
        When the executable cannot be started (missing, not executable).
    """
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=dict(env),
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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group ended between the timeout and the kill
        pass
    proc.wait()
