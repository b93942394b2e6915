"""Run a child process with a wall-clock limit; it never outlives its time or gsme.

The command runs under a small reaper process that leads its own process group: when the
command ends, or at its time limit, the whole group is killed; if gsme itself dies (even by
``kill -9``) the reaper is signalled by the kernel (Linux ``PR_SET_PDEATHSIG``) and kills
the group. A process that left the group (``setsid``, a double fork) survives unless the
command runs in a sandbox (:mod:`gsme.sandbox`), whose processes all end with it.

Standard error goes to an unlinked temporary file, not a pipe, so a process that keeps it
open cannot hold gsme past the command's end. Folders given to :func:`remove_when_gone` are
removed when this process ends, however it ends.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_STDERR", "Completed", "remove_when_gone", "run_limited"]


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
import ctypes, os, resource, signal, subprocess, sys
parent = int(os.environ.pop("GSME_PARENT_PID"))
limits = [(getattr(resource, name), tuple(map(int, values.split(":")))) for name, values in
          (item.split("=") for item in os.environ.pop("GSME_RLIMITS").split())]
def stop(*_):
    os.killpg(0, signal.SIGKILL)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, stop)
try:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass  # not Linux: the timeout still holds
if os.getppid() != parent:
    stop()  # gsme died before the signal was armed
def limit():
    for kind, soft_hard in limits:
        resource.setrlimit(kind, soft_hard)
try:
    code = subprocess.Popen(sys.argv[1:], preexec_fn=limit if limits else None).wait()
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
    sandbox=None,
    cpu_s: int | None = None,
    memory_mb: int | None = None,
) -> Completed:
    """Run ``argv`` (no shell) in its own process group; kill the group when it ends.

    Standard output is discarded: children report through files they write. ``sandbox``
    (a :class:`gsme.sandbox.Sandbox`) runs the command inside it. ``cpu_s`` (CPU seconds)
    and ``memory_mb`` (private writable memory, ``RLIMIT_DATA``) limit each process of the
    command.

    Raises
    ------
    OSError
        When the executable cannot be started (missing, not executable).
    """
    argv = list(argv)
    _require_executable(argv[0], env.get("PATH"), cwd)
    if sandbox is not None:
        argv = sandbox.wrap(argv)
    limits = []  # soft:hard; SIGXCPU at cpu_s, SIGKILL a second later
    if cpu_s:
        limits.append(f"RLIMIT_CPU={cpu_s}:{cpu_s + 1}")
    if memory_mb:
        limits.append(f"RLIMIT_DATA={memory_mb << 20}:{memory_mb << 20}")
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        given.write((stdin or "").encode())
        given.seek(0)
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REAPER, *argv],
            stdin=given if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**env, "GSME_PARENT_PID": str(os.getpid()),
                 "GSME_RLIMITS": " ".join(limits)},
            cwd=cwd,
            start_new_session=True,
        )
        ended = _ended(proc, timeout_s)
        _kill_group(proc)
        return Completed(proc.returncode if ended else None, _tail(err),
                         time.perf_counter() - start)


def _ended(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait up to ``timeout_s`` for ``proc`` to end; True when it did.

    On Linux it is left unreaped, so its process group cannot be reused before it is killed.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(timeout_s * 1000))
    finally:
        os.close(fd)


def _tail(file) -> str:
    file.seek(0, os.SEEK_END)
    file.seek(max(0, file.tell() - 4 * MAX_STDERR))
    return file.read().decode("utf-8", errors="replace")[-MAX_STDERR:]


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
    except ProcessLookupError:  # the group has ended already
        pass
    proc.wait()


_JANITOR = r"""
import os, shutil, sys, time
names = sys.stdin.buffer.read().decode().split("\0")  # EOF: the process that started us ended
paths = [name for name in names if name]
for _ in range(5):  # processes being killed meanwhile may still write into them
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    if not any(os.path.lexists(path) for path in paths):
        break
    time.sleep(0.2)
"""
_janitor: int | None = None  # the write end of the pipe to the helper process
_janitor_lock = threading.Lock()


def remove_when_gone(folder: str | Path) -> None:
    """Remove ``folder`` when this process ends, however it ends (even by ``kill -9``).

    A helper process started on first use reads folder names from a pipe until its end
    closes (this process ended), then removes those still there.
    """
    global _janitor
    name = str(Path(folder).resolve()).encode() + b"\0"
    with _janitor_lock:
        for _ in range(2):  # a second time if the helper was killed
            if _janitor is None:
                _janitor = _start_janitor()
            try:
                os.write(_janitor, name)
                return
            except BrokenPipeError:
                os.close(_janitor)
                _janitor = None


def _start_janitor() -> int:
    read, write = os.pipe()
    try:
        os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _JANITOR], os.environ,
                       file_actions=[(os.POSIX_SPAWN_DUP2, read, 0),
                                     (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)],
                       setsid=True)
    finally:
        os.close(read)
    return write
