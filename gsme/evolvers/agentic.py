"""The agentic evolver: a coding agent reads every trace of a round in a sandbox and answers
with diagnoses and patches through the Claude evolver's contract.

Once per round (:meth:`AgenticEvolver.diagnose`; :meth:`~AgenticEvolver.propose` returns
the patches of the same session) the evolver lays the round out as a read-only
*workspace*, runs the agent command in gsme's sandbox (:mod:`gsme.sandbox`) and reads its
*answer folder*, the one folder it may write. Every item is checked by the same code as
the Claude evolver's tool answers (:func:`gsme.evolvers.claude_tools.check_items`,
``accept_diagnosis``, ``accept_patch``: schema, levers, where × why, env-gate grammar,
beacon, path rules, size limits, secret scan). An answer with invalid parts gets one
repair turn: the command runs again with ``errors.json`` and its first answer
(``previous/``) in the workspace; what is still invalid is dropped, kept with its reason in
``failed_diagnoses`` / ``failed_proposals`` and listed in the call's record.

The folder contract
-------------------
The command starts in the workspace (read-only), which holds:

================================ =====================================================
``PROMPT.md``                    how to work and what to write (``gsme/prompts/agentic.txt``)
``index.json``, ``index.md``     the round (``round, parent, children, attempt,
                                 budget, answer``) and every train trial of the parent:
                                 ``id, task_id, repeat, candidate, passed, failed,
                                 score, error, features, transcript`` (its path)
``trials/<id>/transcript.txt``   each trial's full transcript; ``trial.json`` its record
``vocabulary.md``, ``.json``     the why labels
``history/``                     earlier rounds' ``diagnoses.csv``, ``decisions.csv``,
                                 the mechanisms tried (``mechanisms.csv``/``.md``), the
                                 archive (``archive.csv``/``.md``)
``harness/``                     the parent's harness as a git checkout (one commit)
``contract/``                    ``diagnoses.schema.json``, ``patches.schema.json``,
                                 ``example.json``
``errors.json``, ``previous/``   on the repair turn only: what was wrong, the first answer
================================ =====================================================

It writes into the answer folder (its path: ``index.json``'s ``answer``, ``{answer}``,
``$GSME_ANSWER``): ``diagnoses.json`` (``{"diagnoses": [...]}``) and ``patches.json``
(``{"patches": [...]}``), each item as the Claude evolver's tools take it; optionally
``usage.json`` (``turns, input_tokens, output_tokens, cache_creation_input_tokens,
cache_read_input_tokens, cost_usd``) and ``transcript.txt`` (kept, redacted, in the
call's record). Files are read without following links, at most
:data:`~gsme.evolvers.agentic_workspace.MAX_ANSWER_BYTES` each.

Commands
--------
``command`` is ``"claude"`` (Claude Code through ``claude-agent-sdk``:
:mod:`gsme.evolvers.agentic_claude` runs in the sandbox; needs ``network = true`` and
``ANTHROPIC_API_KEY``), ``"codex"`` (OpenAI's Codex CLI: ``codex exec --json
--skip-git-repo-check --ephemeral --dangerously-bypass-approvals-and-sandbox -C
WORKSPACE [-m MODEL] -`` with the prompt on standard input and its JSON events written
to ``codex-events.jsonl`` in the answer folder, where its token counts are read; gsme's
sandbox is its sandbox; needs ``network = true`` and ``OPENAI_API_KEY``), or a user's
command as a list or string with the placeholders ``{workspace}``, ``{answer}``,
``{python}``, ``{model}``, ``{attempt}``, ``{seed}``. Files the command needs (its
script) are named in ``readable``. Its environment: ``PATH``, ``LANG``, the names in
``pass_env``, ``env``, and ``GSME_WORKSPACE``, ``GSME_ANSWER``, ``GSME_ATTEMPT``,
``GSME_SEED``, ``GSME_MODEL``, ``GSME_BUDGET`` (what is left, as JSON).

The sandbox and the budget
--------------------------
The command sees the workspace and the answer folder (both temporary folders outside any
run directory), the system, the interpreter and ``readable``; never a run directory (a
ledger, a test split, another run), gsme's files, the real home or other processes; it
runs as an unprivileged user, with no network unless ``network = true`` (then outbound
through slirp4netns: gsme cannot narrow it to the model's API). Writes anywhere but the
answer folder fail or vanish with the sandbox.

The budget is per round, over both turns. ``minutes``: enforced always, from outside (the
process group is killed; a killed turn's answer is discarded and the round goes on).
``turns``, ``tokens``, ``dollars``: read after each turn from what the command reports
(``usage.json``; Codex's event stream), and a turn past any of them is discarded whole
with no repair. The ``claude`` adapter also hands them to the SDK (``max_turns``,
``max_budget_usd``) and stops a session once its tokens pass the budget, and writes
``usage.json`` after the agent's last write; a user's command or Codex report their own
usage (they can under-report it: only ``minutes`` holds against a command that lies; Codex
reports no dollars). A command that reports no usage is held to ``minutes`` alone.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from gsme import sandbox
from gsme._proc import remove_tree, remove_when_gone, run_limited
from gsme.agents.command import template
from gsme.evolvers.agentic_workspace import (
    ANSWER_FILES,
    CODEX_EVENTS,
    PROMPT_FILE,
    read_answer_folder,
    write_errors,
    write_workspace,
)
from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver, Log, RoundView, prompt_digest
from gsme.evolvers.claude_prompt import load_prompt, train_failures
from gsme.evolvers.claude_tools import (
    DIAGNOSE_TOOL,
    PROPOSE_TOOL,
    accept_diagnosis,
    accept_patch,
    check_items,
    runtime_beacons,
)
from gsme.patches import Patch, lever_files, read_patches
from gsme.redact import Redactor, passed_secrets
from gsme.schema import LEVERS
from gsme.vocabulary import Vocabulary

__all__ = ["COMMANDS", "PLACEHOLDERS", "AgenticEvolver", "codex_command"]

logger = logging.getLogger(__name__)

ADDED_BY = "agentic-evolver"
COMMANDS = {"claude": ("ANTHROPIC_API_KEY",), "codex": ("OPENAI_API_KEY",)}
"""The commands known by name, with the key each passes to the sandbox when it is set."""
PLACEHOLDERS = ("workspace", "answer", "python", "model", "attempt", "seed")
_BASE_ENV = ("PATH", "LANG")
_STDERR_TAIL = 2000


def codex_command(model: str | None = None) -> list[str]:
    """The Codex CLI command line the evolver runs (placeholders filled per turn).

    Examples
    --------
    >>> codex_command("gpt-5.5")[:3]
    ['sh', '-c', 'codex exec --json --skip-git-repo-check --ephemeral --dangerously-bypass-approvals-and-sandbox -C "$1" ${3:+-m "$3"} - > "$2/codex-events.jsonl"']
    >>> codex_command("gpt-5.5")[3:]
    ['codex', '{workspace}', '{answer}', 'gpt-5.5']
    """
    line = ("codex exec --json --skip-git-repo-check --ephemeral "
            "--dangerously-bypass-approvals-and-sandbox -C \"$1\" ${3:+-m \"$3\"} - "
            f"> \"$2/{CODEX_EVENTS}\"")
    return ["sh", "-c", line, "codex", "{workspace}", "{answer}", model or ""]


class AgenticEvolver(Evolver):
    """An :class:`Evolver` that runs a coding agent per round (see the module docstring).

    Parameters
    ----------
    command : str or list of str
        ``"claude"``, ``"codex"``, or a command template (list, or a string split like a
        shell line) with the placeholders of :data:`PLACEHOLDERS`.
    model : str, optional
        Handed to the command (``{model}``, ``$GSME_MODEL``; ``claude``/``codex``: their
        model option).
    network : bool
        Outbound network in the sandbox (``claude`` and ``codex`` need it).
    minutes, turns, tokens, dollars : number, optional
        The round's budget (``minutes`` always holds; see the module docstring).
    pass_env : sequence of str
        Variables copied into the command's environment (the known commands add their key).
    env : mapping of str to str, optional
        Variables given with their values.
    readable : sequence of str
        Files or folders the command may read (its own program), read-only.
    keep : str, optional
        Keep each round's workspace and answers under this folder (``round-<r>/``).
    seed : int
        Handed to the command (``{seed}``); :meth:`reseed` changes it per round.

    Attributes
    ----------
    calls : list of dict
        One record per turn: ``call_id, kind, command, model, attempt, ok, error,
        stop_reason, exit_code, seconds, turns, input_tokens, output_tokens,
        cache_creation_input_tokens, cache_read_input_tokens, cost_usd, n_diagnoses,
        n_patches, dropped, transcript`` (the token counts and cost None when the command
        reports none).
    failed_diagnoses, failed_proposals : list of dict
        ``{reason, raw}`` of every item (or answer) dropped.

    Examples
    --------
    >>> evolver = AgenticEvolver(command=["{python}", "my_agent.py", "{answer}"],
    ...                          readable=["my_agent.py"], minutes=5)
    >>> evolver.reads_round, evolver.budget
    (True, {'minutes': 5.0, 'turns': None, 'tokens': None, 'dollars': None})
    """

    name = "agent"
    reads_round = True

    def __init__(self, *, command: str | list[str] = "claude", model: str | None = None,
                 network: bool = False, minutes: float = 30.0, turns: int | None = None,
                 tokens: int | None = None, dollars: float | None = None,
                 pass_env: Sequence[str] = (), env: Mapping[str, str] | None = None,
                 readable: Sequence[str] = (), keep: str | None = None, seed: int = 0):
        self.kind = command if isinstance(command, str) and command in COMMANDS else "command"
        if self.kind == "command":
            if not isinstance(command, (str, list, tuple)):
                raise TypeError(f"command must be 'claude', 'codex', a string or a list of "
                                f"strings, got {command!r}")
            self.command = list(template(command, "command", allowed=PLACEHOLDERS))
        else:
            self.command = (codex_command(model) if self.kind == "codex" else
                            ["{python}", "{tools}/agentic_claude.py", "{workspace}", "{answer}",
                             model or ""])
        if not isinstance(network, bool):
            raise TypeError(f"network must be true or false, got {network!r}")
        if self.kind in COMMANDS and not network:
            raise ValueError(f"command = {command!r} calls its model's API: set network = true")
        self.network = network
        reason = sandbox.unavailable(network=network)
        if reason is not None:
            raise ValueError(f"the agentic evolver runs in a sandbox, which cannot start "
                             f"here: {reason}")
        for label, value, kinds, what in (
                ("minutes", minutes, (int, float), "number"), ("turns", turns, int, "whole number"),
                ("tokens", tokens, int, "whole number"), ("dollars", dollars, (int, float), "number")):
            if (value is None and label == "minutes") or value is not None and (
                    isinstance(value, bool) or not isinstance(value, kinds) or not value > 0):
                unset = "" if label == "minutes" else " or unset"
                raise ValueError(f"{label} must be a positive {what}{unset}, got {value!r}")
        self.budget = {"minutes": float(minutes), "turns": turns, "tokens": tokens,
                       "dollars": None if dollars is None else float(dollars)}
        if isinstance(pass_env, str) or not all(isinstance(n, str) and n for n in pass_env):
            raise TypeError(f"pass_env must be a list of variable names, got {pass_env!r}")
        self.pass_env = tuple(dict.fromkeys([*pass_env, *COMMANDS.get(self.kind, ())]))
        self.env = dict(env or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.env.items()):
            raise TypeError(f"env must map names to strings, got {env!r}")
        if isinstance(readable, str):
            raise TypeError(f"readable must be a list of paths, got {readable!r}")
        self.readable = tuple(str(Path(r).resolve()) for r in readable)
        self.keep = None if keep is None else Path(keep)
        self.model = model
        self.seed = int(seed)
        self.calls: list[dict] = []
        self.failed_diagnoses: list[dict] = []
        self.failed_proposals: list[dict] = []
        self._view: RoundView | None = None
        self._patches: dict[str, list[Patch]] = {}

    def __repr__(self) -> str:
        return (f"AgenticEvolver(command={self.kind if self.kind in COMMANDS else self.command!r}"
                f", model={self.model!r}, budget={self.budget})")

    def signature(self) -> dict[str, str]:
        """Its model; ``prompt`` a digest of its prompt text, command and budget."""
        return {"evolver_model": str(self.model or ""),
                "prompt": prompt_digest("agentic", command=self.command, budget=self.budget)}

    def reseed(self, seed: int) -> None:
        """The seed handed to the command from now on."""
        self.seed = int(seed)

    def secrets(self) -> dict[str, str]:
        """The ``pass_env`` variables (as set now) and ``env`` values named like credentials."""
        return passed_secrets(self.pass_env, self.env)

    def begin_round(self, view: RoundView) -> None:
        """Keep the round's view for the next :meth:`diagnose` (every trial, the history)."""
        self._view = view

    # ------------------------------------------------------------------- the two steps

    def diagnose(self, failures: pd.DataFrame, *, harness: Mapping[str, str] | None = None,
                 vocabulary: Vocabulary | None = None, log: Log | None = None) -> pd.DataFrame:
        """Run the round's agent session; return its checked diagnoses.

        The workspace holds every trial of the round's view (:meth:`begin_round`), else
        the train rows of ``failures`` alone. The session's checked patches wait for
        :meth:`propose` on the same harness.

        Returns
        -------
        DataFrame
            ``candidate, task_id, repeat, where, why, evidence, confidence,
            evidence_verified`` (as the Claude evolver's).
        """
        if harness is None:
            raise ValueError("harness is required: the agent reads the parent's harness")
        vocabulary = vocabulary if vocabulary is not None else Vocabulary.default()
        view, self._view = self._view, None
        shown = train_failures(failures)
        if view is not None:
            trials = view.trials.drop(columns=["pathology", "split"], errors="ignore")
        else:
            trials = shown.assign(passed=False, score=float("nan"), error=None)
        rows, patches = self._session(trials, harness, vocabulary, view, log)
        self._patches = {_key(harness): patches}  # the last session's only
        frame = pd.DataFrame(rows, columns=DIAGNOSIS_COLUMNS + ["evidence_verified"])
        return frame.astype({"repeat": "int64", "confidence": "float64",
                             "evidence_verified": bool})

    def propose(self, diagnoses: pd.DataFrame, *, harness: Mapping[str, str],
                archive: pd.DataFrame | None = None, vocabulary: Vocabulary | None = None,
                n: int, history: pd.DataFrame | None = None,
                log: Log | None = None) -> list[Patch]:
        """The first ``n`` checked patches of the session :meth:`diagnose` ran on ``harness``.

        Raises
        ------
        ValueError
            No session ran on this harness (call :meth:`diagnose` first: one agent session
            writes both).
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"n must be an integer >= 0, got {n!r}")
        key = _key(harness)
        if key not in self._patches:
            raise ValueError("propose needs diagnose on the same harness first: the agent's "
                             "one session per round writes both")
        patches = self._patches.pop(key)
        for extra in patches[n:]:
            self.failed_proposals.append({"reason": f"more than n={n} valid patches",
                                          "raw": extra.id})
        return patches[:n]

    # ------------------------------------------------------------------------ the session

    def _session(self, trials: pd.DataFrame, harness: Mapping[str, str],
                 vocabulary: Vocabulary, view: RoundView | None,
                 log: Log | None) -> tuple[list[dict], list[Patch]]:
        files = lever_files(harness)
        failing = [r for r in trials.to_dict("records")
                   if not r["passed"] or (pd.notna(r.get("score")) and r["score"] < 1)]
        known = {(str(r["task_id"]), int(r["repeat"])): (str(r["candidate"]),
                 r["transcript"] if isinstance(r["transcript"], str) else "")
                 for r in failing}
        rules_d = {"known": known, "seen": set(), "vocabulary": vocabulary, "coined": {},
                   "added_by": ADDED_BY}
        rules_p = {"harness": harness, "files": files, "ids": set(), "vocabulary": vocabulary,
                   "coined": rules_d["coined"], "added_by": ADDED_BY,
                   "beacons": {p.beacon for p in read_patches(harness)} | runtime_beacons(files)}
        work = Path(tempfile.mkdtemp(prefix="gsme-agent-")).resolve()
        remove_when_gone(work)
        work.chmod(0o755)
        rows: list[dict] = []
        patches: list[Patch] = []
        pending: list[dict] = []
        try:
            workspace = work / "workspace"
            workspace.mkdir()
            write_workspace(workspace, trials=trials, harness=harness, vocabulary=vocabulary,
                            prompt="", facts={}, **_earlier(view))
            tools = self._tools(work)
            spent = {"seconds": 0.0, "turns": 0, "tokens": 0, "dollars": 0.0}
            for attempt in (0, 1):
                answer = work / f"answer-{attempt}"
                answer.mkdir()
                answer.chmod(0o777)
                left = self._left(spent)
                facts = {"round": None if view is None else view.round,
                         "parent": None if view is None else view.parent,
                         "children": None if view is None else view.children,
                         "attempt": attempt, "answer": str(answer), "budget": left}
                _rewrite_index(workspace, facts, self._prompt(facts, trials, known))
                record, found = self._turn(attempt, workspace, answer, tools, left, spent)
                if found is None:  # killed or over budget: nothing of this turn is read
                    record["dropped"] = ["the whole answer of this turn"]
                    self._emit(record, log)
                    break
                kept = (len(rows), len(patches))
                problems, rejected = list(found["problems"]), []
                for tool, accept, into, rules in (
                        (DIAGNOSE_TOOL, accept_diagnosis, rows, rules_d),
                        (PROPOSE_TOOL, accept_patch, patches, rules_p)):
                    rules = {**rules, "tasks": {r["task_id"] for r in rows}} \
                        if tool == PROPOSE_TOOL else rules
                    if tool in found["payloads"]:
                        p, r = check_items(tool, found["payloads"][tool],
                                           lambda item, a=accept, k=rules: a(item, **k), into)
                        problems += [f"{ANSWER_FILES[tool]}: {x}" for x in p]
                        rejected += [(tool, *x) for x in r]
                pending = [{"tool": None, "reason": x, "raw": ""} for x in problems] + [
                    {"tool": tool, "reason": f"{ANSWER_FILES[tool]} {label}: {reason}",
                     "raw": json.dumps(raw)[:4000]} for tool, label, reason, raw in rejected]
                record.update(n_diagnoses=len(rows) - kept[0], n_patches=len(patches) - kept[1],
                              ok=not pending, dropped=[x["reason"] for x in pending][:50])
                self._emit(record, log)
                if not pending or attempt == 1 or self._left(spent)["minutes"] <= 0:
                    break
                write_errors(workspace, {
                    "problems": problems,
                    "rejected": [{"file": ANSWER_FILES[tool], "item": label, "reason": reason}
                                 for tool, label, reason, _ in rejected],
                    "kept": {"diagnoses": len(rows), "patches": len(patches)}}, found["raw"])
            for item in pending:
                failed = (self.failed_diagnoses if item.pop("tool") == DIAGNOSE_TOOL
                          else self.failed_proposals)
                failed.append(item)
            self._keep(work, view)
        finally:
            remove_tree(str(work))
        return rows, patches

    def _turn(self, attempt: int, workspace: Path, answer: Path, tools: Path | None,
              left: dict, spent: dict) -> tuple[dict, dict | None]:
        """Run the command once; its call record and what it wrote (None when discarded)."""
        record = {"call_id": uuid.uuid4().hex[:12], "kind": "agent",
                  "command": self.kind if self.kind in COMMANDS else " ".join(self.command)[:300],
                  "model": self.model, "attempt": attempt, "ok": False, "error": None,
                  "stop_reason": None, "exit_code": None, "seconds": 0.0, "turns": None,
                  "input_tokens": None, "output_tokens": None,
                  "cache_creation_input_tokens": None, "cache_read_input_tokens": None,
                  "cost_usd": None, "n_diagnoses": 0, "n_patches": 0, "dropped": [],
                  "transcript": None}
        values = {"workspace": str(workspace), "answer": str(answer), "python": sys.executable,
                  "model": self.model or "", "attempt": attempt, "seed": self.seed,
                  "tools": str(tools)}
        argv = [part.format_map(values) for part in self.command]
        env = {**{n: os.environ[n] for n in _BASE_ENV if n in os.environ},
               **{n: os.environ[n] for n in self.pass_env if n in os.environ}, **self.env,
               "GSME_WORKSPACE": str(workspace), "GSME_ANSWER": str(answer),
               "GSME_ATTEMPT": str(attempt), "GSME_SEED": str(self.seed),
               "GSME_MODEL": self.model or "", "GSME_BUDGET": json.dumps(left)}
        box = sandbox.Sandbox(workspace, writable=[answer], network=self.network,
                              readable=[*self.readable, *([str(tools)] if tools else [])])
        stdin = (workspace / PROMPT_FILE).read_text() if self.kind == "codex" else None
        seconds = left["minutes"] * 60
        if seconds <= 0:
            record.update(error="no minutes left for this turn", stop_reason="budget")
            return record, None
        try:
            done = run_limited(argv, timeout_s=seconds, env=env, cwd=workspace, stdin=stdin,
                               sandbox=box)
        except (OSError, RuntimeError) as err:
            record.update(error=f"the command could not start: {err}", stop_reason="error")
            return record, None
        spent["seconds"] += done.seconds
        hide = Redactor(self.secrets())
        record.update(seconds=round(done.seconds, 3), exit_code=done.returncode)
        if done.sandbox_error:
            record.update(error=f"the sandbox could not start: {done.sandbox_error}",
                          stop_reason="error")
            return record, None
        if done.timed_out:
            record.update(error=f"killed at its time budget ({self.budget['minutes']:g} "
                                "minutes a round); its answer is discarded",
                          stop_reason="minutes")
            return record, None
        found = read_answer_folder(answer)
        usage = found["usage"]
        stderr = hide.cut(done.stderr, _STDERR_TAIL, keep="end").strip()
        record["transcript"] = hide("\n".join(
            x for x in (found["transcript"], stderr and f"[stderr]\n{stderr}") if x))
        record["stop_reason"] = f"exit {done.returncode}"
        if usage:
            record.update({k: usage[k] for k in usage if k in record})
            spent["turns"] += int(usage.get("turns", 0))
            spent["tokens"] += int(sum(usage.get(k, 0) for k in (
                "input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")))
            spent["dollars"] += float(usage.get("cost_usd", 0.0))
        elif found["usage_error"]:
            record["error_usage"] = found["usage_error"]
        over = [f"{name} {spent[name]:g} > {limit:g}" for name, limit in
                (("turns", self.budget["turns"]), ("tokens", self.budget["tokens"]),
                 ("dollars", self.budget["dollars"])) if limit is not None and spent[name] > limit]
        if over:
            record.update(error="over the round's budget (" + ", ".join(over) + "); its "
                          "answer is discarded", stop_reason="budget")
            return record, None
        if done.full:
            record.update(error=f"the answer folder reached the sandbox's cap of "
                                f"{sandbox.WRITABLE_MB} MiB; its answer is discarded",
                          stop_reason="full")
            return record, None
        return record, found

    # ------------------------------------------------------------------------ helpers

    def _left(self, spent: dict) -> dict:
        b = self.budget
        return {"minutes": max(0.0, b["minutes"] - spent["seconds"] / 60),
                "turns": None if b["turns"] is None else max(0, b["turns"] - spent["turns"]),
                "tokens": None if b["tokens"] is None else max(0, b["tokens"] - spent["tokens"]),
                "dollars": None if b["dollars"] is None else max(0.0,
                                                                  b["dollars"] - spent["dollars"])}

    def _prompt(self, facts: dict, trials: pd.DataFrame, known: dict) -> str:
        budget = ", ".join(f"{k} {v:g}" for k, v in facts["budget"].items() if v is not None)
        return load_prompt("agentic", round=facts["round"] or "?", parent=facts["parent"],
                           children=facts["children"] or "a few", n_trials=len(trials),
                           n_failing=len(known), n_passing=len(trials) - len(known),
                           answer=facts["answer"], levers=", ".join(LEVERS), budget=budget)

    def _tools(self, work: Path) -> Path | None:
        """The folder of the ``claude`` adapter script (None for other commands)."""
        if self.kind != "claude":
            return None
        tools = work / "tools"
        tools.mkdir(mode=0o755)
        shutil.copy(Path(__file__).with_name("agentic_claude.py"), tools / "agentic_claude.py")
        (tools / "agentic_claude.py").chmod(0o644)
        return tools

    def _keep(self, work: Path, view: RoundView | None) -> None:
        if self.keep is None:
            return
        name = f"round-{view.round}" if view is not None else f"call-{len(self.calls)}"
        target = self.keep / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(work, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))

    def _emit(self, record: dict, log: Log | None) -> None:
        hide = Redactor(self.secrets())
        if record["error"] is not None:
            record["error"] = hide(record["error"])
            logger.warning("agentic evolver turn %s: %s", record["call_id"], record["error"])
        self.calls.append(record)
        if log is not None:
            log(dict(record))


def _rewrite_index(workspace: Path, facts: dict, prompt: str) -> None:
    """Put this turn's facts into ``index.json`` and write its prompt."""
    index_path = workspace / "index.json"
    index = json.loads(index_path.read_text())
    index.update(facts)
    index_path.write_text(json.dumps(index, indent=1))
    (workspace / PROMPT_FILE).write_text(prompt)


def _earlier(view: RoundView | None) -> dict:
    empty = pd.DataFrame()
    if view is None:
        return {"diagnoses": empty, "decisions": empty, "history": empty, "archive": empty}
    return {"diagnoses": view.diagnoses, "decisions": view.decisions, "history": view.history,
            "archive": view.archive}


def _key(harness: Mapping[str, str]) -> str:
    return json.dumps(sorted(harness.items()))
