"""A kernel sandbox (bubblewrap) for one command: what it sees, and whether it can start.

:class:`Sandbox` turns a command into a ``bwrap`` command line; :func:`unavailable` says
once per process why no sandbox can start on this machine (None when one can). Inside:

=============================== ======================================================
what                            in the sandbox
=============================== ======================================================
the file system                 read-only, except as below
the working directory           visible, read-only (even inside a hidden folder)
the interpreter                 ``sys.executable``, its prefixes and user site-packages
                                visible, read-only
``writable`` folders            the trial's own (harness copy, ``{out}``): read-write
                                at their own paths
``readable`` paths              visible, read-only at their own paths
``/tmp``, ``/dev/shm``, HOME    empty, private, writable, gone when the command ends;
                                ``HOME`` is :data:`HOME`
hidden (empty) folders          the real home, the system's temporary folder, gsme's own
                                files (the package and its data: hidden tests), the
                                folder of every SQLite database this process has open
                                (a run directory: ledger, repository, lock, wherever it
                                lies) and the caller's ``hidden`` (other trials' copies)
processes                       its own PID namespace and ``/proc``: gsme and other
                                trials are not there; a new session; no capabilities;
                                when the command's first process ends, every process
                                it started ends (``setsid`` or double-forked ones too);
                                when gsme dies, the sandbox dies
IPC, host name, network         own IPC and UTS namespaces; no network unless
                                ``network`` (its own empty network namespace)
=============================== ======================================================

A command killed by signal N exits with 128 + N, as in a shell. Resource limits set by the
caller (:func:`gsme._proc.run_limited`) are inherited.

Examples
--------
>>> box = Sandbox(workdir="/srv/task", writable=["/srv/out"], network=False)
>>> box.wrap(["python", "run.py"])[-2:]  # doctest: +SKIP
['python', 'run.py']
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gsme.resources import DATA_DIR

__all__ = ["HOME", "INSTALL_HINT", "Sandbox", "unavailable"]

HOME = "/tmp/home"
"""The ``HOME`` of a sandboxed command: an empty folder of its private ``/tmp``."""
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"

_PRIVATE = ("/tmp", "/dev/shm")
_NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
               "--new-session", "--cap-drop", "ALL")
_SQLITE = b"SQLite format 3\x00"


def _paths(values: Iterable) -> tuple[Path, ...]:
    return tuple(Path(v).resolve() for v in values)


@dataclass(frozen=True)
class Sandbox:
    """One sandboxed command's view of the machine (see the module docstring).

    Parameters
    ----------
    workdir : str or Path
        The working directory: visible read-only, the command starts there.
    writable : sequence of paths
        Folders bound read-write at their own paths (the trial's own folders).
    readable : sequence of paths
        Files or folders visible read-only at their own paths even inside a hidden folder.
    hidden : sequence of paths
        Folders replaced by empty ones, beside those hidden always.
    network : bool
        Share the machine's network; False gives an empty network namespace.

    Examples
    --------
    >>> import subprocess
    >>> Path("secret").mkdir()
    >>> _ = Path("secret/key.txt").write_text("k")
    >>> box = Sandbox(".", hidden=["secret"], network=False)
    >>> subprocess.run(box.wrap(["ls", "secret"]), capture_output=True, text=True).stdout
    ''
    >>> subprocess.run(box.wrap(["touch", "new.txt"]), capture_output=True).returncode
    1
    """

    workdir: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    network: bool = True

    def __post_init__(self):
        object.__setattr__(self, "workdir", Path(self.workdir).resolve())
        for name in ("writable", "readable", "hidden"):
            object.__setattr__(self, name, _paths(getattr(self, name)))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The ``bwrap`` command line that runs ``argv`` in this sandbox.

        Raises
        ------
        RuntimeError
            When no sandbox can start here (:func:`unavailable` says why).
        """
        reason = unavailable()
        if reason is not None:
            raise RuntimeError(f"no sandbox: {reason}")
        shown = [self.workdir, *_interpreter()]
        hidden = [h for h in dict.fromkeys([*_always_hidden(), *self.hidden])
                  if h.is_dir() and str(h) not in ("/", *_PRIVATE)]
        # a hidden folder holding something shown is masked first, then the shown paths
        # are bound back on top; the other hidden folders are masked after them
        early = [h for h in hidden if any(s.is_relative_to(h) for s in shown)]
        late = [h for h in hidden if h not in early]
        args = [_bwrap(), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                *_pairs("--tmpfs", _PRIVATE), "--dir", HOME, *_NAMESPACES,
                *([] if self.network else ["--unshare-net"])]
        args += _pairs("--tmpfs", early)
        masked = [*early, *map(Path, _PRIVATE)]
        args += _pairs("--ro-bind", [s for s in shown if any(s.is_relative_to(m) for m in masked)],
                       twice=True)
        args += _pairs("--tmpfs", late)
        args += _pairs("--bind", self.writable, twice=True)
        args += _pairs("--ro-bind", self.readable, twice=True)
        return [*args, "--setenv", "HOME", HOME, "--chdir", str(self.workdir), "--", *argv]


def _pairs(option: str, paths: Iterable, *, twice: bool = False) -> list[str]:
    out = []
    for path in paths:
        out += [option, str(path), *([str(path)] if twice else [])]
    return out


def _interpreter() -> list[Path]:
    """The running interpreter, its prefixes and the user's site-packages."""
    found = [Path(sys.executable).resolve().parent, Path(sys.prefix), Path(sys.base_prefix),
             Path(site.getusersitepackages())]
    found = [p.resolve() for p in found if p.is_dir()]
    return [p for p in dict.fromkeys(found)
            if not any(p != q and p.is_relative_to(q) for q in found)]


def _always_hidden() -> list[Path]:
    """The real home, the temporary folder, gsme's files and every open SQLite database's folder."""
    own = [Path.home(), Path(tempfile.gettempdir()), Path(__file__).parent, DATA_DIR]
    return [*_paths(own), *_database_folders()]


def _database_folders() -> list[Path]:
    """Folders of the SQLite databases this process has open (a run's ledger)."""
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        return []
    found = []
    for fd in fds.iterdir():
        try:
            target = Path(os.readlink(fd))
            if target.is_absolute() and target.is_file():
                with target.open("rb") as fh:
                    if fh.read(len(_SQLITE)) == _SQLITE:
                        found.append(target.parent.resolve())
        except OSError:  # closed meanwhile, unreadable, or not a path
            continue
    return found


def unavailable() -> str | None:
    """Why no sandbox can start on this machine, in one sentence; None when one can.

    Probed once per process: ``bwrap`` must be on ``PATH`` and start a sandbox with every
    namespace :class:`Sandbox` uses.

    Examples
    --------
    >>> unavailable() is None  # bwrap is on PATH and can start a sandbox here
    True
    """
    return _probe()[1]


def _bwrap() -> str:
    return _probe()[0]


@functools.cache
def _probe() -> tuple[str | None, str | None]:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None, f"bubblewrap (bwrap) is not on PATH; {INSTALL_HINT}"
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            *_pairs("--tmpfs", _PRIVATE), *_NAMESPACES, "--unshare-net", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"bwrap cannot start ({err})"
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
        return None, f"bwrap cannot start a sandbox here ({said}); user namespaces may be off"
    return bwrap, None
