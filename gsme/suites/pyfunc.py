"""The bundled ``pyfunc`` task suite: small Python function tasks graded by hidden tests.

Each task is one TOML file in ``data/suites/pyfunc/tasks/`` (the format is described in
that folder's README). The public part of a task (statement, signature, visible examples)
is what an agent may show its model; hidden tests and the reference solution stay here.

Solutions are never executed in the calling process: :func:`grade` and
:func:`run_examples` run them in a separate isolated Python process (``python -I``, a
minimal environment, a 1 GiB address-space limit where the platform has one) killed after
``timeout_s`` seconds. Where a kernel sandbox can start (:mod:`gsme.sandbox`) that process
runs inside one, without network, and sees neither the task files (hidden tests,
references) nor a run directory; elsewhere it runs without one (this is gsme's own
grader, not a user's command, so it is not refused).

Examples
--------
>>> from gsme.suites import pyfunc
>>> tasks = pyfunc.load_tasks()
>>> sorted(tasks["split"].unique())
['test', 'train']
>>> pyfunc.grade("lcm", "def lcm(a, b):\\n    return a * b").passed
False
"""

from __future__ import annotations

import builtins
import copy
import functools
import json
import os
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gsme import sandbox
from gsme._proc import remove_when_gone, run_limited
from gsme.resources import PYFUNC_TASKS
from gsme.schema import SPLITS

__all__ = [
    "CATEGORIES",
    "DIFFICULTIES",
    "TASK_DIR",
    "GradeResult",
    "grade",
    "load_tasks",
    "reference",
    "run_examples",
    "task",
]

TASK_DIR = PYFUNC_TASKS
CATEGORIES = ("strings", "lists", "math", "parsing", "algorithms")
DIFFICULTIES = ("easy", "medium", "hard")
PUBLIC_FIELDS = ("task_id", "split", "category", "difficulty", "entry_point", "signature",
                 "statement", "examples")
_RUNNER = Path(__file__).with_name("_pyfunc_runner.py")
_TEXT_FIELDS = ("id", "category", "difficulty", "split", "entry_point", "signature",
                "statement", "reference")
_MAX_DETAILS = 3


@dataclass(frozen=True)
class GradeResult:
    """The verdict on one solution.

    ``passed`` is True when every case passed; ``n_passed`` of ``n_total`` cases passed;
    ``error`` says why it did not pass (None when it did); ``seconds`` is the wall time of
    the test process. A timeout is a failure with ``n_passed`` 0.

    Examples
    --------
    >>> result = grade("lcm", "def lcm(a, b):\\n    return a * b")
    >>> result.passed, result.n_passed, result.n_total
    (False, 3, 6)
    >>> result.error
    '3 of 6 hidden tests failed (wrong answer: 3)'
    """

    passed: bool
    n_passed: int
    n_total: int
    error: str | None
    seconds: float


def load_tasks() -> pd.DataFrame:
    """Every pyfunc task with its split and features, one row per task.

    Returns
    -------
    DataFrame
        ``task_id`` (str), ``split`` (``train``/``test``), ``category`` (one of
        :data:`CATEGORIES`), ``difficulty`` (one of :data:`DIFFICULTIES`),
        ``has_examples`` (bool: the statement comes with visible examples),
        ``n_examples`` and ``n_hidden`` (int: visible examples, hidden tests), sorted by
        ``task_id``.

    Examples
    --------
    >>> tasks = load_tasks()
    >>> len(tasks), tasks["split"].value_counts().to_dict()
    (60, {'train': 40, 'test': 20})
    """
    rows = [
        {
            "task_id": t["id"],
            "split": t["split"],
            "category": t["category"],
            "difficulty": t["difficulty"],
            "has_examples": bool(t["examples"]),
            "n_examples": len(t["examples"]),
            "n_hidden": len(t["tests"]),
        }
        for t in _all_tasks().values()
    ]
    return pd.DataFrame(rows).sort_values("task_id", ignore_index=True)


def task(task_id: str) -> dict:
    """The public part of one task: what an agent may show its model.

    Returns
    -------
    dict
        ``task_id, split, category, difficulty, entry_point, signature, statement`` and
        ``examples`` (a list of ``{"call", "expected"}`` or ``{"call", "raises"}``); never
        the hidden tests or the reference solution.

    Examples
    --------
    >>> public = task("lcm")
    >>> public["signature"], public["examples"]
    ('def lcm(a: int, b: int) -> int:', [{'call': 'lcm(4, 6)', 'expected': '12'}])
    >>> "reference" in public
    False
    """
    raw = _get(task_id)
    public = {"task_id": raw["id"], **{k: raw[k] for k in PUBLIC_FIELDS if k in raw}}
    return copy.deepcopy(public)


def reference(task_id: str) -> str:
    """The reference solution of ``task_id`` (for checking the grader, never for agents).

    Examples
    --------
    >>> print(reference("lcm"))
    import math
    <BLANKLINE>
    def lcm(a, b):
        return abs(a * b) // math.gcd(a, b) if a and b else 0
    <BLANKLINE>
    """
    return _get(task_id)["reference"]


def grade(task_id: str, code: str, *, timeout_s: float = 10) -> GradeResult:
    """Run the hidden tests of ``task_id`` against ``code`` in a separate process.

    ``error`` summarises failures by kind only (wrong answers, exception names, timeout,
    syntax error) so it never reveals hidden test content.

    Examples
    --------
    >>> grade("lcm", reference("lcm")).passed
    True
    """
    raw = _get(task_id)
    report, seconds = _execute(code, raw["entry_point"], raw["tests"], timeout_s)
    if isinstance(report, str):
        return GradeResult(False, 0, len(raw["tests"]), report, seconds)
    kinds = [r["kind"] for r in report["results"] if not r["ok"]]
    n_total = len(raw["tests"])
    error = report["error"] or (_summarise(kinds, n_total) if kinds else None)
    n_passed = n_total - len(kinds) if report["status"] == "ok" else 0
    return GradeResult(error is None, n_passed, n_total, error, seconds)


def run_examples(task_id: str, code: str, *, timeout_s: float = 10) -> GradeResult:
    """Run the visible examples of ``task_id`` against ``code`` in a separate process.

    ``error`` spells out the failing examples (call, what came back, what was expected),
    which is safe to show a model: the examples are part of the statement. A task without
    examples gives ``passed`` True with ``n_total`` 0.

    Examples
    --------
    >>> run_examples("lcm", reference("lcm")).passed
    True
    >>> run_examples("lcm", "def lcm(a, b):\\n    return a * b").error
    'lcm(4, 6) returned 24; expected 12'
    """
    raw = _get(task_id)
    cases = raw["examples"]
    if not cases:
        return GradeResult(True, 0, 0, None, 0.0)
    report, seconds = _execute(code, raw["entry_point"], cases, timeout_s)
    if isinstance(report, str):
        return GradeResult(False, 0, len(cases), report, seconds)
    failed = [r["detail"] for r in report["results"] if not r["ok"]]
    error = report["error"] or ("; ".join(failed[:_MAX_DETAILS]) if failed else None)
    n_passed = len(cases) - len(failed) if report["status"] == "ok" else 0
    return GradeResult(error is None, n_passed, len(cases), error, seconds)


def _execute(code: str, entry_point: str, cases: list, timeout_s: float):
    """Run the test process; a dict report, or a failure reason string, and the seconds."""
    if not isinstance(code, str):
        raise TypeError(f"code must be a str of Python source, not {type(code).__name__}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    payload = json.dumps({"code": code, "entry_point": entry_point, "cases": cases})
    env = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"}
    with tempfile.TemporaryDirectory(prefix="gsme-pyfunc-") as tmp:
        remove_when_gone(tmp)
        report_path = Path(tmp) / "report.json"
        argv = [sys.executable, "-I", str(_RUNNER), str(report_path)]
        box = (sandbox.Sandbox(tmp, writable=[tmp], readable=[_RUNNER], network=False)
               if sandbox.unavailable() is None else None)
        done = run_limited(argv, timeout_s=timeout_s, env=env, cwd=tmp, stdin=payload,
                           sandbox=box)
        if done.timed_out:
            return f"timed out after {timeout_s:g} s", done.seconds
        if not report_path.exists():
            return (
                f"the test process ended without a report (exit code {done.returncode})",
                done.seconds,
            )
        return json.loads(report_path.read_text(encoding="utf-8")), done.seconds


def _summarise(kinds: list[str], n_total: int) -> str:
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    parts = ", ".join(f"{kind}: {n}" for kind, n in sorted(counts.items()))
    return f"{len(kinds)} of {n_total} hidden tests failed ({parts})"


def _get(task_id: str) -> dict:
    tasks = _all_tasks()
    if task_id not in tasks:
        raise KeyError(f"unknown pyfunc task_id {task_id!r}; see load_tasks() for the {len(tasks)} ids")
    return tasks[task_id]


@functools.cache
def _all_tasks() -> dict[str, dict]:
    files = sorted(TASK_DIR.glob("*.toml"))
    if not files:
        raise FileNotFoundError(f"no pyfunc task files (*.toml) in {TASK_DIR}")
    tasks = {}
    for path in files:
        raw = _validated(path)
        tasks[raw["id"]] = raw
    return tasks


def _validated(path: Path) -> dict:
    with path.open("rb") as fh:
        raw = tomllib.load(fh)
    where = f"pyfunc task file {path.name}"
    for key in _TEXT_FIELDS:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ValueError(f"{where}: field {key!r} must be a non-empty string")
    if raw["id"] != path.stem:
        raise ValueError(f"{where}: field 'id' is {raw['id']!r} but must match the file name")
    for key, allowed in (("split", SPLITS), ("category", CATEGORIES), ("difficulty", DIFFICULTIES)):
        if raw[key] not in allowed:
            raise ValueError(f"{where}: field {key!r} is {raw[key]!r}; allowed: {list(allowed)}")
    for key in ("examples", "tests"):
        cases = raw.setdefault(key, [])
        for i, case in enumerate(cases):
            _check_case(f"{where}: {key}[{i}]", case)
    if not raw["tests"]:
        raise ValueError(f"{where}: field 'tests' must list at least one hidden test")
    return raw


def _check_case(where: str, case) -> None:
    if not isinstance(case, dict) or not isinstance(case.get("call"), str):
        raise ValueError(f"{where} must be a table with a string 'call'")  # noqa: TRY004
    outcome = {"expected", "raises"} & set(case)
    if len(outcome) != 1 or set(case) - {"call", "expected", "raises"}:
        raise ValueError(f"{where} must have 'call' and exactly one of 'expected' or 'raises'")
    exc = case.get("raises")
    if exc is not None and not (
        isinstance(getattr(builtins, exc, None), type) and issubclass(getattr(builtins, exc), BaseException)
    ):
        raise ValueError(f"{where}: 'raises' is {exc!r}, which is not a builtin exception name")
