"""Run any executable as a task agent: one process per trial, a JSON result file back.

(Over 600 lines because this docstring is the whole contract a harness runner is written
against, kept beside the code that enforces it; the code alone is about 600.)

This is how a user plugs in their own harness runner. For every trial the agent fills a
command template, runs it (no shell, its own process group, a time limit, a minimal
environment) and reads ``{out}/result.json``.

Template placeholders
---------------------
``{harness}`` harness directory (a fresh copy for this trial alone), ``{task_id}``,
``{repeat}`` the repeat index, ``{attempt}``, ``{run_seed}``,
``{out}`` a fresh empty directory for this trial's output, ``{python}`` the running Python
interpreter. A string template is split with :func:`shlex.split` before the placeholders
are filled, so a filled value is always one argument. ``{{`` and ``}}`` are literal braces.
Before the command starts, the task row is written to ``{out}/task.json``.

``result.json``
---------------
A JSON object with these fields (any other field makes the result invalid):

=================== ============== ====================================================
field               type           meaning
=================== ============== ====================================================
``passed``          bool           the task's own grader said pass; required unless
                                   ``score`` is given and the agent has a ``threshold``
                                   (then ``passed`` is ``score >= threshold``)
``score``           number or null the grader's graded score, in [0, 1] (default none:
                                   pass/fail only)
``infra_ok``        bool           false when the environment, not the agent, failed
                                   (default true)
``beacons``         list of str    activation beacons that fired (default empty)
``tokens``          number or null tokens spent (default NaN)
``cost_usd``        number or null dollars spent (default NaN)
``transcript``      str            path of a transcript file, relative to ``{out}``
``transcript_text`` str            the transcript inline (instead of ``transcript``)
``error``           str or null    what went wrong, if anything
``pathology``       str or null    a known failure label, if the runner knows one
=================== ============== ====================================================

Files are read from ``{out}`` without following a symbolic link (at any level of the
path) and only when they are regular files; ``result.json`` of more than
:data:`MAX_RESULT_BYTES` is not read. Each of these, and a ``score`` that is not a number
in [0, 1], makes the trial an agent failure whose ``error`` names the file or field (a
trial writes ``{out}`` too: what it plants there must not turn its failures into re-runs).
A transcript longer than :data:`MAX_TRANSCRIPT_BYTES` keeps its first
:data:`MAX_TRANSCRIPT_BYTES`, redacted before the cut, and a last line saying how much was
cut; no more than that is read.

Exit codes and timeouts
-----------------------
Each exit code maps to an outcome in :data:`EXIT_OUTCOMES`:

* ``"result"`` — the trial is what ``result.json`` says; a missing or invalid
  ``result.json`` is an infrastructure failure whose ``error`` gives the reason (but see
  the agent failures above).
* ``"failure"`` — an agent failure (``passed`` false, ``infra_ok`` true), unless a valid
  ``result.json`` says otherwise, in which case it is used.
* ``"infra"`` — an infrastructure failure: the trial is re-run, never scored.

The defaults are :data:`DEFAULT_EXIT_CODES`: 0 → ``result``, 75 (``EX_TEMPFAIL``) →
``infra``; every other code, including death by a signal (negative codes), → ``failure``.
``exit_codes`` entries override the defaults code by code. A timeout kills the whole
process group and counts as ``timeout_is``: ``"infra"`` (default) or ``"failure"``.
A command that cannot be started at all is an infrastructure failure.

Environment
-----------
The child sees only ``PATH``, ``HOME`` and ``LANG`` (when set; and ``PWD`` in the
sandbox, where ``HOME`` is a fresh empty folder), the variables named in
``pass_env`` (copied from this process; a named variable that is missing makes the trial
an infrastructure failure) and the values given in ``env``. Nothing else — in particular
no API key — reaches it unless named.

Isolation
---------
With ``isolation="sandbox"`` (the default, :data:`~gsme.settings.DEFAULT_ISOLATION`) every
trial runs in a kernel sandbox (:mod:`gsme.sandbox`): it sees the system folders, the
interpreter, the folders on ``PATH`` and its working directory read-only, its harness copy
and ``{out}`` read-write (each capped at :data:`gsme.sandbox.WRITABLE_MB` MiB: a trial that
fills one is an agent failure naming the cap), a fresh empty ``HOME``, ``/tmp`` and
``/dev/shm``; not the run directory nor any other, other trials' copies, gsme's files nor
other processes; it runs as an unprivileged user (65534 when gsme is root), and every
process it starts ends with it. A sandbox that cannot be set up for a trial makes it an
infrastructure failure whose ``error`` says why. There, a signal N ends the trial with exit
code 128 + N. Where no sandbox can start (no bubblewrap, no user namespaces) the agent is
refused unless ``isolation="none"``, which runs trials as plain
processes (their process group is killed when they end; ``setsid`` escapes that).
Standard error is kept in ``error`` as its last 500 characters, redacted before the cut
(:meth:`gsme.redact.Redactor.cut`), so the cut leaves no half of a secret or a key.
``network=True`` (sandbox only: outbound access through slirp4netns, never the host's
loopback) needs slirp4netns; ``network=False`` cuts the network and unix sockets;
``cpu_s`` and ``memory_mb`` limit the CPU seconds and private memory of each process of a
trial.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import pandas as pd

from gsme import _renamed, sandbox
from gsme._proc import remove_tree, remove_when_gone, run_limited, scratch
from gsme.agents.base import TaskAgent, Trajectory
from gsme.comparisons import digest
from gsme.redact import Redactor, passed_secrets
from gsme.schema import LEVERS, SPLITS
from gsme.settings import DEFAULT_ISOLATION, ISOLATIONS

__all__ = ["BASE_ENV", "DEFAULT_EXIT_CODES", "EXIT_OUTCOMES", "MAX_RESULT_BYTES",
           "MAX_TRANSCRIPT_BYTES", "PLACEHOLDERS", "CommandAgent", "Refused", "read_inside",
           "template"]

__getattr__ = _renamed.renamed(__name__, {"OUTCOMES": "EXIT_OUTCOMES"})
EXIT_OUTCOMES = ("result", "failure", "infra")
DEFAULT_EXIT_CODES = {0: "result", 75: "infra"}
PLACEHOLDERS = ("harness", "task_id", "repeat", "attempt", "run_seed", "out", "python")
BASE_ENV = ("PATH", "HOME", "LANG")
RESULT_FILE = "result.json"
_RESULT_FIELDS = ("passed", "score", "infra_ok", "beacons", "tokens", "cost_usd",
                  "transcript", "transcript_text", "error", "pathology")
_STDERR_TAIL = 500
MAX_TRANSCRIPT_BYTES = 8 << 20
"""A transcript is cut to this many bytes (its first); no more of its file is read."""
MAX_RESULT_BYTES = 16 << 20
"""A ``result.json`` larger than this is not read: the trial is an agent failure."""
_READ_PAST_CUT = 64 << 10  # read this far past a cut, so a key across it is redacted whole
_SHOWN = 80  # characters of a bad field's value shown in an error


class CommandAgent(TaskAgent):
    """A task agent that runs an executable once per trial (see the module docstring).

    Parameters
    ----------
    command : str or list of str
        The command template; placeholders as in :data:`PLACEHOLDERS`.
    tasks : DataFrame, str or Path
        The tasks: a frame, or a CSV, JSON (records) or JSONL file, with ``task_id``,
        ``split`` and any feature columns.
    test_tasks : DataFrame, str or Path, optional
        Another dataset, in the same forms (``split`` not needed), whose tasks are the whole
        sealed split; every task of ``tasks`` then trains, whatever its ``split``
        (``[split] test_dataset`` in a run config). No task id may be in both.
    timeout_s : float
        Wall-clock limit of one trial.
    env : mapping of str to str, optional
        Extra environment variables with explicit values.
    pass_env : sequence of str
        Names of variables copied from this process's environment.
    exit_codes : mapping of int to str, optional
        Overrides of :data:`DEFAULT_EXIT_CODES`; values from :data:`EXIT_OUTCOMES`.
    timeout_is : {"infra", "failure"}
        What a timeout counts as.
    workdir : str or Path, optional
        The directory the command runs in (default: the current directory).
    health_command : str or list of str, optional
        Run by :meth:`health_check` (``{python}`` is its only placeholder); healthy when
        it exits 0 within ``health_timeout_s``.
    keep_outputs : str or Path, optional
        Keep each trial's ``{out}`` directory under this folder; by default ``{out}`` is
        a temporary directory removed once the result is read.
    isolation : {"sandbox", "none"}
        Run each trial in a kernel sandbox, or as a plain process (see Isolation above).
    network : bool
        Let sandboxed trials reach the network.
    cpu_s, memory_mb : int, optional
        CPU seconds and private memory (MiB) each process of a trial may use (no limit:
        the wall-clock ``timeout_s`` still holds).
    honours_env_gates : bool
        True when the runner applies each patch only on the tasks its env gate admits (it
        reads ``{harness}/patches/*.toml``); then a trial can be borrowed where a
        candidate's own patches do not act. Default False: every patch counts as acting on
        every task, which is right for a runner that loads the whole harness.
    threshold : float, optional
        With it, a ``result.json`` that gives ``score`` but not ``passed`` passes when
        ``score >= threshold`` (a number in [0, 1]).
    task_model : str, optional
        The frozen model the runner runs, recorded with the run (``[agent] task_model``);
        the run refuses an evolver that uses the same model.
    frozen : sequence of str
        Harness settings no patch may change, each ``"<file>:<key>"`` of a TOML file of
        the harness (``["config/agent.toml:model"]``): a patch changing one is refused.

    Raises
    ------
    ValueError
        With ``isolation="sandbox"`` where no sandbox can start; the message says why.

    Examples
    --------
    >>> import pandas as pd
    >>> tasks = pd.DataFrame({"task_id": ["t1"], "split": ["train"]})
    >>> agent = CommandAgent("{python} run_task.py --harness {harness} --task {task_id} "
    ...                      "--out {out}", tasks, timeout_s=300)
    """

    name = "command"

    def __init__(
        self,
        command: str | Sequence[str],
        tasks: pd.DataFrame | str | Path,
        *,
        timeout_s: float = 600,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        exit_codes: Mapping[int, str] | None = None,
        timeout_is: str = "infra",
        workdir: str | Path | None = None,
        health_command: str | Sequence[str] | None = None,
        health_timeout_s: float = 60,
        keep_outputs: str | Path | None = None,
        isolation: str = DEFAULT_ISOLATION,
        network: bool = True,
        cpu_s: int | None = None,
        memory_mb: int | None = None,
        honours_env_gates: bool = False,
        threshold: float | None = None,
        task_model: str | None = None,
        frozen: Sequence[str] = (),
        test_tasks: pd.DataFrame | str | Path | None = None,
    ) -> None:
        self.command = template(command, "command")
        if task_model is not None and (not isinstance(task_model, str) or not task_model):
            raise TypeError(f"task_model must be a model name, got {task_model!r}")
        self.task_model = task_model
        self.frozen = _frozen(frozen)
        if not isinstance(honours_env_gates, bool):
            raise TypeError(f"honours_env_gates must be true or false, got {honours_env_gates!r}")
        self.honours_env_gates = honours_env_gates
        self._tasks = (_read_tasks(tasks) if test_tasks is None else
                       _tasks_with_test_dataset(tasks, test_tasks))
        if not timeout_s > 0 or not health_timeout_s > 0:
            raise ValueError(
                f"timeout_s and health_timeout_s must be positive, got {timeout_s!r} and "
                f"{health_timeout_s!r}"
            )
        self.timeout_s = float(timeout_s)
        self.health_timeout_s = float(health_timeout_s)
        self.env = _check_env(env)
        if isinstance(pass_env, str) or not all(isinstance(n, str) and n for n in pass_env):
            raise TypeError(f"pass_env must be a sequence of variable names, got {pass_env!r}")
        self.pass_env = tuple(pass_env)
        self.exit_codes = {**DEFAULT_EXIT_CODES, **_check_exit_codes(exit_codes or {})}
        if timeout_is not in ("infra", "failure"):
            raise ValueError(f"timeout_is must be 'infra' or 'failure', got {timeout_is!r}")
        self.timeout_is = timeout_is
        self.workdir = Path(workdir) if workdir is not None else None
        self.health_command = (
            template(health_command, "health_command", allowed=("python",))
            if health_command is not None
            else None
        )
        self.keep_outputs = Path(keep_outputs) if keep_outputs is not None else None
        self.isolation, self.network = _check_isolation(isolation, network)
        for name, value in (("cpu_s", cpu_s), ("memory_mb", memory_mb)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a positive whole number or None, got {value!r}")
        self.cpu_s, self.memory_mb = cpu_s, memory_mb
        if threshold is not None and not _unit(threshold):
            raise ValueError(f"threshold must be a number in [0, 1] or None, got {threshold!r}")
        self.threshold = threshold

    def tasks(self) -> pd.DataFrame:
        """The tasks given at construction (a copy)."""
        return self._tasks.copy()

    def signature(self) -> dict[str, str]:
        """As :meth:`TaskAgent.signature`, the ``harness`` family being the command
        template's digest (another runner is another world)."""
        return {**super().signature(), "harness": f"command:{digest(list(self.command))}"}

    def secrets(self) -> dict[str, str]:
        """The ``pass_env`` variables (as set now) and ``env`` values named like credentials."""
        return passed_secrets(self.pass_env, self.env)

    def run(
        self, harness_dir: Path, task: Mapping, *, repeat: int, attempt: int, run_seed: int
    ) -> Trajectory:
        """Run the command once for ``task`` and turn its result into a trajectory."""
        task_id = str(task["task_id"])
        out = self._new_out_dir(task_id, repeat, attempt)
        try:
            values = {"harness": str(Path(harness_dir).resolve()), "task_id": task_id,
                      "repeat": repeat, "attempt": attempt, "run_seed": run_seed,
                      "out": str(out), "python": sys.executable}
            argv = [part.format_map(values) for part in self.command]
            (out / "task.json").write_text(json.dumps(_plain(task), default=str), encoding="utf-8")
            return self._run(argv, out, self._sandbox(values["harness"], out))
        finally:
            if self.keep_outputs is None:
                remove_tree(out)

    def health_check(self) -> bool:
        """Run ``health_command``: healthy when it exits 0 in time (always, without one)."""
        if self.health_command is None:
            return True
        argv = [part.format_map({"python": sys.executable}) for part in self.health_command]
        done = run_limited(argv, timeout_s=self.health_timeout_s, env=self._base_env(),
                           cwd=self.workdir, sandbox=self._sandbox(), cpu_s=self.cpu_s,
                           memory_mb=self.memory_mb)
        return done.returncode == 0

    def _sandbox(self, *writable) -> sandbox.Sandbox | None:
        """The trial's sandbox: other trials' copies and outputs hidden (None: no isolation)."""
        if self.isolation == "none":
            return None
        hidden = [p for p in (scratch(), self.keep_outputs) if p is not None]
        return sandbox.Sandbox(self.workdir or Path.cwd(), writable=writable, hidden=hidden,
                               network=self.network)

    def _run(self, argv: list[str], out: Path, box: sandbox.Sandbox | None) -> Trajectory:
        missing = [n for n in self.pass_env if n not in os.environ]
        if missing:
            return Trajectory(False, infra_ok=False,
                              error=f"pass_env names variables that are not set: {missing}")
        env = {**self._base_env(), **{n: os.environ[n] for n in self.pass_env}, **self.env}
        try:
            done = run_limited(argv, timeout_s=self.timeout_s, env=env, cwd=self.workdir,
                               sandbox=box, cpu_s=self.cpu_s, memory_mb=self.memory_mb)
        except OSError as exc:
            return Trajectory(False, infra_ok=False, error=f"could not start {argv[0]!r}: {exc}")
        if done.sandbox_error is not None:
            return Trajectory(False, infra_ok=False, seconds=done.seconds,
                              error=f"the sandbox could not start: {done.sandbox_error}")
        if done.full:
            names = dict(zip(map(str, box.writable), ("{harness}", "{out}")))
            full = " and ".join(names.get(f, f) for f in done.full)
            return Trajectory(False, infra_ok=True, seconds=done.seconds,
                              error=f"{full} reached the sandbox's cap of "
                              f"{sandbox.WRITABLE_MB} MiB or {sandbox.WRITABLE_FILES} files "
                              "(agent failure)")
        hide = Redactor(self.secrets())
        stderr = hide.cut(done.stderr, _STDERR_TAIL, keep="end").strip()
        if done.timed_out:
            return Trajectory(False, infra_ok=self.timeout_is == "failure", seconds=done.seconds,
                              error=f"timed out after {self.timeout_s:g} s (counted as "
                              f"{self.timeout_is})")
        outcome = self.exit_codes.get(done.returncode, "failure")
        exited = f"exit code {done.returncode}" + (f"; stderr: {stderr}" if stderr else "")
        if outcome == "infra":
            return Trajectory(False, infra_ok=False, seconds=done.seconds,
                              error=f"{exited} (mapped to infra)")
        result, problem, refused = _read_result(out, self.threshold, hide)
        if result is not None:
            return Trajectory(**result, seconds=done.seconds)
        if refused:
            return Trajectory(False, infra_ok=True, seconds=done.seconds,
                              error=f"{problem} (agent failure; {exited})")
        if outcome == "result":
            return Trajectory(False, infra_ok=False, seconds=done.seconds,
                              error=f"{problem} ({exited})")
        return Trajectory(False, infra_ok=True, seconds=done.seconds,
                          error=f"{exited} (agent failure; {problem})")

    def _base_env(self) -> dict[str, str]:
        return {n: os.environ[n] for n in BASE_ENV if n in os.environ}

    def _new_out_dir(self, task_id: str, repeat: int, attempt: int) -> Path:
        parent = self.keep_outputs
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in task_id)
        out = Path(tempfile.mkdtemp(prefix=f"{safe}-r{repeat}-a{attempt}-", dir=parent)).resolve()
        if parent is None:
            remove_when_gone(out)
        return out


def _check_isolation(isolation, network) -> tuple[str, bool]:
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {list(ISOLATIONS)}, got {isolation!r}")
    if not isinstance(network, bool):
        raise TypeError(f"network must be true or false, got {network!r}")
    if isolation == "none" and not network:
        raise ValueError('network = false needs isolation = "sandbox"')
    reason = sandbox.unavailable(network=network) if isolation == "sandbox" else None
    if reason is not None:
        raise ValueError(f"command trials run in a sandbox, which cannot start here: {reason}; "
                         'or set isolation = "none" to run them without one')
    return isolation, network


class Refused(Exception):
    """What a trial planted in ``{out}`` or wrote as its score: an agent failure.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> (out / "link").symlink_to("/etc/passwd")
    >>> try:
    ...     read_inside(out, "link", 100)
    ... except Refused as err:
    ...     print(err)
    link is or passes through a symbolic link; gsme follows no link in the output directory
    """


def _read_result(out: Path, threshold: float | None,
                 hide: Redactor) -> tuple[dict | None, str | None, bool]:
    """The trajectory's fields from ``result.json``, or None, the reason it is missing or
    invalid, and whether that makes the trial an agent failure (:class:`Refused`)."""
    try:
        raw, _ = read_inside(out, RESULT_FILE, MAX_RESULT_BYTES, whole=True)
    except FileNotFoundError:
        return None, f"no {RESULT_FILE} in the output directory", False
    except Refused as refused:
        return None, str(refused), True
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{RESULT_FILE} is not valid JSON: {exc}", False
    try:
        problem = _result_problem(data, threshold, hide)
        if problem is not None:
            return None, f"invalid {RESULT_FILE}: {problem}", False
        return _fields(data, out, threshold, hide), None, False
    except FileNotFoundError:
        return None, (f"invalid {RESULT_FILE}: field 'transcript' must name a file inside the "
                      f"output directory, got {hide.cut(repr(data['transcript']), _SHOWN)}"), False
    except Refused as refused:
        return None, f"{RESULT_FILE}: {refused}", True


def _result_problem(data, threshold: float | None, hide: Redactor) -> str | None:
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    unknown = sorted(set(data) - set(_RESULT_FIELDS))
    if unknown:
        return f"unknown fields {hide.cut(str(unknown), _SHOWN)}; allowed: {list(_RESULT_FIELDS)}"
    score = data.get("score")
    if score is not None and not _unit(score):
        raise Refused(f"field 'score' must be a number in [0, 1] or null, got "
                       f"{hide.cut(json.dumps(score), _SHOWN)}")
    if "passed" not in data and (score is None or threshold is None):
        return ("field 'passed' is required and must be true or false (or give 'score' and "
                "set the agent's threshold)")
    if not isinstance(data.get("passed", False), bool):
        return "field 'passed' is required and must be true or false"
    if not isinstance(data.get("infra_ok", True), bool):
        return "field 'infra_ok' must be true or false"
    beacons = data.get("beacons", [])
    if not isinstance(beacons, list) or not all(isinstance(b, str) for b in beacons):
        return "field 'beacons' must be a list of strings"
    for key in ("tokens", "cost_usd"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"field {key!r} must be a number or null"
    for key in ("transcript", "transcript_text", "error", "pathology"):
        if data.get(key) is not None and not isinstance(data[key], str):
            return f"field {key!r} must be a string or null"
    if data.get("transcript") is not None and data.get("transcript_text") is not None:
        return "give 'transcript' or 'transcript_text', not both"
    return None


def _fields(result: dict, out: Path, threshold: float | None, hide: Redactor) -> dict:
    """The trajectory's fields (but ``seconds``) of a checked ``result``; its transcript
    file read (:func:`read_inside`; FileNotFoundError when it is not there) and cut to
    :data:`MAX_TRANSCRIPT_BYTES`; its error redacted, as the stderr tail is (an error may
    be cut and printed before the ledger redacts what it stores)."""
    score = result.get("score")
    name = result.get("transcript")
    if name:
        data, size = read_inside(out, name, MAX_TRANSCRIPT_BYTES + _READ_PAST_CUT)
        transcript = _cut(data.decode("utf-8", errors="replace"), size,
                          len(data[:MAX_TRANSCRIPT_BYTES].decode("utf-8", errors="replace")),
                          "bytes", hide)
    else:
        text = result.get("transcript_text") or ""
        transcript = _cut(text, len(text), MAX_TRANSCRIPT_BYTES, "characters", hide)
    return {
        "passed": result["passed"] if "passed" in result else score >= threshold,
        "score": None if score is None else float(score),
        "infra_ok": result.get("infra_ok", True),
        "beacons": tuple(result.get("beacons", ())),
        "tokens": _number(result.get("tokens")),
        "cost_usd": _number(result.get("cost_usd")),
        "transcript": transcript,
        "error": None if result.get("error") is None else hide(result["error"]),
        "pathology": result.get("pathology"),
    }


def _cut(text: str, size: int, keep: int, unit: str, hide: Redactor) -> str:
    """``text`` (of ``size`` ``unit`` in all) whole, or its first ``keep`` characters,
    redacted before the cut (:meth:`~gsme.redact.Redactor.cut`), and a line saying so."""
    if size <= MAX_TRANSCRIPT_BYTES:
        return text
    return (f"{hide.cut(text, keep)}\n[gsme: transcript cut: its first {MAX_TRANSCRIPT_BYTES} "
            f"of {size} {unit} are kept]")


def read_inside(out: Path, name: str, limit: int, *, whole: bool = False) -> tuple[bytes, int]:
    """The first ``limit`` bytes of the file ``name`` (relative, ``/``-separated) in ``out``
    and its size in bytes, with no symbolic link followed at any level of its path.

    Raises
    ------
    FileNotFoundError
        No such file.
    Refused
        ``name`` leaves ``out``, a part of its path is a symbolic link, it is not a regular
        file, or (``whole``) it is larger than ``limit``.

    Examples
    --------
    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> _ = (out / "result.json").write_text('{"passed": true}')
    >>> read_inside(out, "result.json", 8)
    (b'{"passed', 16)
    """
    parts = PurePosixPath(name).parts
    if not parts or parts[0] == "/" or ".." in parts:
        raise FileNotFoundError(name)
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
    folder = os.open(out, flags | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = _open_at(part, flags | os.O_DIRECTORY, folder, name)
            os.close(folder)
            folder = inner
        fd = _open_at(parts[-1], flags | os.O_NONBLOCK, folder, name)
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{name} is not a regular file; gsme reads only regular files "
                           "from the output directory")
        if whole and size > limit:
            raise Refused(f"{name} is {size} bytes, more than the {limit} gsme reads")
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), size
    finally:
        os.close(fd)


def _open_at(part: str, flags: int, folder: int, name: str) -> int:
    """``os.open`` of ``part`` in the open folder ``folder``, never through a link."""
    try:
        return os.open(part, flags, dir_fd=folder)
    except OSError as err:
        try:
            link = stat.S_ISLNK(os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode)
        except OSError:
            link = False
        if link or err.errno in (errno.ELOOP, errno.EMLINK):
            raise Refused(f"{name} is or passes through a symbolic link; gsme follows no "
                           "link in the output directory") from None
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            raise FileNotFoundError(name) from None
        raise Refused(f"{name} cannot be opened ({os.strerror(err.errno)})") from None


def _unit(value) -> bool:
    """True for a number in [0, 1] (not a boolean, not NaN)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and 0.0 <= value <= 1.0)


def _number(value) -> float:
    return math.nan if value is None else float(value)


def template(command, label: str, allowed: Sequence[str] = PLACEHOLDERS) -> tuple[str, ...]:
    """A command template as its parts, each checked to use only ``allowed`` placeholders.

    A string is split like a shell line (:func:`shlex.split`); ``label`` names the
    setting in errors.

    Examples
    --------
    >>> template("{python} run.py --out {out}", "command")
    ('{python}', 'run.py', '--out', '{out}')
    >>> try:
    ...     template(["run", "{oops}"], "command", allowed=("out",))
    ... except ValueError as err:
    ...     print(err)
    command part '{oops}' has an unknown or malformed placeholder (KeyError('oops')); allowed: ['{out}']
    """
    if isinstance(command, str):
        parts = tuple(shlex.split(command))
    elif isinstance(command, Sequence) and all(isinstance(p, str) for p in command):
        parts = tuple(command)
    else:
        raise TypeError(f"{label} must be a string or a list of strings, got {command!r}")
    if not parts:
        raise ValueError(f"{label} is empty")
    dummy = dict.fromkeys(allowed, "x")
    for part in parts:
        try:
            part.format_map(dummy)
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"{label} part {part!r} has an unknown or malformed placeholder ({exc!r}); "
                f"allowed: {['{' + name + '}' for name in allowed]}"
            ) from None
    return parts


def _frozen(frozen) -> tuple[str, ...]:
    """``frozen`` checked: ``"<file>:<key>"`` strings naming a TOML file of the harness."""
    if isinstance(frozen, str) or not all(
            isinstance(f, str) and f.count(":") == 1 and all(f.split(":"))
            and f.split("/", 1)[0] in LEVERS for f in frozen):
        raise ValueError(f"frozen must list settings as '<file>:<key>' with the file in a "
                         f"lever folder ({', '.join(LEVERS)}), e.g. "
                         f"['config/agent.toml:model']; got {frozen!r}")
    return tuple(frozen)


def _tasks_with_test_dataset(tasks, test_tasks) -> pd.DataFrame:
    """Every task of ``tasks`` trains; those of ``test_tasks``, another dataset, are the
    sealed split (their ``split`` column, if any, is not read)."""
    pool = _read_tasks(tasks, split="train")
    test = _read_tasks(test_tasks, split="test", name="test_tasks")
    both = sorted(set(pool["task_id"]) & set(test["task_id"]))
    if both:
        raise ValueError(f"test_tasks and tasks share task ids {both[:5]}: the sealed split "
                         "must hold tasks the run never trains on")
    return pd.concat([pool, test], ignore_index=True)


def _read_tasks(tasks, *, split: str | None = None, name: str = "tasks") -> pd.DataFrame:
    """The tasks of a frame or file; with ``split``, every task is given that split."""
    if isinstance(tasks, (str, Path)):
        path = Path(tasks)
        suffix = path.suffix.lower()
        if suffix == ".csv":
            frame = pd.read_csv(path, dtype={"task_id": str, "split": str})
        elif suffix in (".json", ".jsonl"):
            frame = pd.read_json(path, orient="records", lines=suffix == ".jsonl",
                                 dtype={"task_id": str, "split": str})
        else:
            raise ValueError(f"{name} file must end in .csv, .json or .jsonl, got "
                             f"{path.name!r}")
    elif isinstance(tasks, pd.DataFrame):
        frame = tasks.copy()
    else:
        raise TypeError(f"{name} must be a DataFrame or a path, got {type(tasks).__name__}")
    if split is not None:
        frame["split"] = split
    missing = [c for c in ("task_id", "split") if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} lack the columns {missing}; they have {list(frame.columns)}")
    frame["task_id"] = frame["task_id"].astype(str)
    bad = frame.loc[~frame["split"].isin(SPLITS), "task_id"].tolist()
    if bad:
        raise ValueError(f"tasks {bad} have a split outside {list(SPLITS)}")
    dup = frame.loc[frame["task_id"].duplicated(), "task_id"].tolist()
    if dup:
        raise ValueError(f"tasks has duplicate task_id values: {dup}")
    return frame.reset_index(drop=True)


def _check_env(env) -> dict[str, str]:
    env = dict(env or {})
    bad = {k: v for k, v in env.items() if not (isinstance(k, str) and isinstance(v, str))}
    if bad:
        raise TypeError(f"env must map names to string values; bad entries: {sorted(map(str, bad))}")
    return env


def _check_exit_codes(exit_codes: Mapping) -> dict[int, str]:
    for code, outcome in exit_codes.items():
        if isinstance(code, bool) or not isinstance(code, int):
            raise TypeError(f"exit_codes keys must be ints, got {code!r}")
        if outcome not in EXIT_OUTCOMES:
            raise ValueError(f"exit_codes[{code}] is {outcome!r}; allowed: {list(EXIT_OUTCOMES)}")
    return dict(exit_codes)


def _plain(task: Mapping) -> dict:
    """The task row with numpy scalars made plain and missing values made null."""
    row = {}
    for key, value in task.items():
        value = value.item() if hasattr(value, "item") else value
        missing = value is pd.NA or value is None or (isinstance(value, float) and math.isnan(value))
        row[str(key)] = None if missing else value
    return row
