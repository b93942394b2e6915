"""Run a child process with a wall-clock limit; it never outlives its time or gsme.

The command runs under a small reaper process (:mod:`gsme._reaper`) that leads its own
process group: when the command ends, or at its time limit, the whole group is killed; if
gsme itself dies (even by ``kill -9``) the reaper is signalled by the kernel (Linux
``PR_SET_PDEATHSIG``) and kills the group. A process that left the group (``setsid``, a
double fork) survives unless the command runs in a sandbox (:mod:`gsme.sandbox`), whose
processes all end with it; the reaper also sets the sandbox up.

Standard error comes back through a pipe read while the command runs: only its last
:data:`MAX_STDERR` characters are kept, nothing is written to disk, and a process that
keeps it open cannot hold gsme past the command's end. Folders given to
:func:`remove_when_gone` are removed when this process ends, however it ends, by
:func:`remove_tree`, which a folder locked by a trial (mode 0) does not stop; trials' copies
of their harness go to :func:`scratch`.
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

from gsme._reaper import encode, read_report, remove_tree

__all__ = ["MAX_STDERR", "Completed", "remove_tree", "remove_when_gone", "run_limited",
           "scratch"]


@dataclass(frozen=True)
class Completed:
    """How a limited child process ended.

    ``returncode`` is None when the process was killed for exceeding its time limit;
    ``stderr`` holds at most the last ``MAX_STDERR`` characters. For a sandboxed command,
    ``full`` lists the writable folders that reached their size cap and
    ``sandbox_error`` says why the sandbox could not start (None when it did).

    Examples
    --------
    >>> done = run_limited(["true"], timeout_s=10, env={"PATH": os.environ["PATH"]})
    >>> done.returncode, done.timed_out, done.full
    (0, False, ())
    """

    returncode: int | None
    stderr: str
    seconds: float
    full: tuple[str, ...] = ()
    sandbox_error: str | None = None

    @property
    def timed_out(self) -> bool:
        """True when the process was killed at its time limit."""
        return self.returncode is None


MAX_STDERR = 4000

_HERE = str(Path(__file__).parent)
# the reaper runs without gsme's package (``-I -S``): its module, compiled once, is imported
# from this folder, put last on the path so that nothing here shadows the standard library
_START = "import sys; sys.path.append(sys.argv.pop(1)); import _reaper; _reaper.{}()"


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

    Examples
    --------
    >>> done = run_limited(["sh", "-c", "echo oops >&2; exit 3"], timeout_s=10,
    ...                    env={"PATH": os.environ["PATH"]})
    >>> done.returncode, done.stderr
    (3, 'oops\\n')
    """
    argv = list(argv)
    _require_executable(argv[0], env.get("PATH"), cwd)
    extra = {}
    if sandbox is not None:
        extra["GSME_SANDBOX"] = encode(sandbox.setup())
        argv = sandbox.wrap(argv)
    limits = []  # soft:hard; SIGXCPU at cpu_s, SIGKILL a second later
    if cpu_s:
        limits.append(f"RLIMIT_CPU={cpu_s}:{cpu_s + 1}")
    if memory_mb:
        limits.append(f"RLIMIT_DATA={memory_mb << 20}:{memory_mb << 20}")
    start = time.perf_counter()
    err_r, err_w = os.pipe()
    report_r, report_w = os.pipe()
    try:
        with tempfile.TemporaryFile() as given:
            given.write((stdin or "").encode())
            given.seek(0)
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _START.format("main"), _HERE, *argv],
                stdin=given if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err_w,
                pass_fds=[report_w],
                env={**env, **extra, "GSME_PARENT_PID": str(os.getpid()),
                     "GSME_RLIMITS": " ".join(limits), "GSME_REPORT_FD": str(report_w)},
                cwd=cwd,
                start_new_session=True,
            )
        os.close(err_w)
        os.close(report_w)
        err_w = report_w = None
        ended, tail = _watch(proc, err_r, timeout_s)
        _kill_group(proc)
        said = read_report(_drain(report_r))
    finally:
        for fd in (err_r, err_w, report_r, report_w):
            if fd is not None:
                os.close(fd)
    stderr = tail.decode("utf-8", errors="replace")[-MAX_STDERR:]
    error = said.get("error")
    if error is not None and stderr.strip():  # written by the launcher, not by the command
        error += f" ({stderr.strip().splitlines()[-1]})"
    return Completed(proc.returncode if ended else None, stderr,
                     time.perf_counter() - start, tuple(said.get("full", ())), error)


def _watch(proc: subprocess.Popen, err: int, timeout_s: float) -> tuple[bool, bytes]:
    """Wait up to ``timeout_s`` for ``proc`` to end while reading standard error from
    ``err``; whether it ended, and the last bytes of its standard error.

    On Linux it is left unreaped, so its process group cannot be reused before it is killed.
    """
    keep = 4 * MAX_STDERR
    tail = b""
    deadline = time.monotonic() + timeout_s
    try:
        ended_fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux 5.3 or later: poll the process
        ended_fd = None
    poll = select.poll()
    poll.register(err, select.POLLIN)
    if ended_fd is not None:
        poll.register(ended_fd, select.POLLIN)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False, tail
            wait = left if ended_fd is not None else min(left, 0.05)
            events = dict(poll.poll(wait * 1000))
            if events.get(err):
                chunk = os.read(err, 65536)
                if not chunk:  # every writer closed it: only the process is left to wait for
                    poll.unregister(err)
                tail = (tail + chunk)[-keep:]
            if (ended_fd is not None and events.get(ended_fd)) or (
                    ended_fd is None and proc.poll() is not None):
                os.set_blocking(err, False)
                return True, (tail + _drain(err))[-keep:]
    finally:
        if ended_fd is not None:
            os.close(ended_fd)


def _drain(fd: int) -> bytes:
    """What can be read from ``fd`` now, without waiting for more."""
    os.set_blocking(fd, False)
    out = b""
    try:
        for _ in range(64):  # a process left writing cannot keep gsme reading
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            out = (out + chunk)[-4 * MAX_STDERR:]
    except BlockingIOError:
        pass
    return out


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
        os.posix_spawn(sys.executable,
                       [sys.executable, "-I", "-S", "-c", _START.format("janitor"), _HERE],
                       os.environ,
                       file_actions=[(os.POSIX_SPAWN_DUP2, read, 0),
                                     (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                     (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)],
                       setsid=True)
    finally:
        os.close(read)
    return write


def scratch() -> str | None:
    """Where trial copies go: ``GSME_SCRATCH``, else memory-backed ``/dev/shm`` when
    writable (copies are made and checked often), else None: the system's temporary
    folder, as :mod:`tempfile` chooses it.

    Examples
    --------
    >>> import os
    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"GSME_SCRATCH": "scratch"}):
    ...     print(scratch())
    scratch
    """
    chosen = os.environ.get("GSME_SCRATCH")
    if chosen:
        return chosen
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
