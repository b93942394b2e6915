"""A run: one directory holding the harness git repository, the ledger and the sealed test.

:class:`Run` is the store of one evolution run. It answers questions by name (its trials,
candidates, decisions, archive, events) and records what the loop (:mod:`gsme.evolve`)
decides, one domain step at a time (:meth:`Run.record`, :meth:`Run.mark`, ...). It stores;
it does not decide what to score or when: :mod:`gsme.measure` drives scoring and the sealed
test and writes through :meth:`Run.trial_sink`. Everything a run knows is in its directory,
so :meth:`Run.open` resumes a run that was killed at any moment.

One process writes to a run at a time: :meth:`Run.create` and :meth:`Run.open` take an
exclusive lock on the directory (``gsme.lock``) held until :meth:`Run.close`; a second
writer gets :class:`RunLockedError` naming the holder. ``Run.open(path, read_only=True)``
takes no lock and writes nothing, for status and reports of live or archived runs.

What a run answers is its reading half (:class:`gsme._run_frames.RunFrames`); its
directory (the lock, the stored settings and agent, the checks made when it opens) is
:mod:`gsme._run_dir`.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Self

import pandas as pd

from gsme import comparisons, plugins, policy, sandbox, schema, scoring, seal
from gsme._proc import scratch
from gsme._renamed import renamed_keywords
from gsme._run_dir import (
    LEDGER,
    LOCK,
    REPO,
    AbsentAgent,
    RunError,
    RunLockedError,
    SealedError,
    check_commitment,
    check_seal,
    checked_settings,
    checked_tasks,
    lock_dir,
    reconcile,
    run_dir,
    stored_agent,
    stored_config,
    tasks_from_json,
    test_commitment,
    unlock_dir,
    verify,
)
from gsme._run_frames import RunFrames
from gsme.agents.base import TaskAgent
from gsme.credentials import refuse_credentials
from gsme.evolvers.base import Evolver
from gsme.gitrepo import HarnessRepo, RepoError
from gsme.ledger import Ledger, LedgerError
from gsme.patches import Patch, PatchError, check_frozen
from gsme.redact import secrets_of
from gsme.resources import SEED_HARNESS
from gsme.settings import RunConfig, Schedule, ValidationError
from gsme.vocabulary import Vocabulary

__all__ = ["MARKED", "RECORDED", "Run", "RunError", "RunLockedError", "SealedError",
           "test_commitment", "verify"]

RECORDED = ("diagnoses", "proposals", "decisions", "archive", "calls", "trials")
"""The tables :meth:`Run.record` writes."""
MARKED = ("round_started", "candidates_committed", "round_done", "budget_reached", "sealing",
          "sealed")
"""The steps of a run's life :meth:`Run.mark` records (kinds of :meth:`Run.events`)."""


class Run(RunFrames):
    """One evolution run, backed by its directory. Use :meth:`create` or :meth:`open`.

    Attributes
    ----------
    path : Path
    agent : TaskAgent
    evolver : Evolver or None
    config : RunConfig
    schedule : Schedule or None
        How long ``gsme run``/``resume`` evolve it (None for a run built in Python).
    read_only : bool

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> run.rounds_done(), run.sealed, len(run.tasks())
    (0, False, 24)
    >>> run.close()
    >>> with Run.open("run", read_only=True) as again:
    ...     print(again.read_only, again.agent.name)
    True simulated:tiny/qwen-careless
    """

    LEDGER, REPO, LOCK = LEDGER, REPO, LOCK

    def __init__(self, path: Path, *, agent: TaskAgent, evolver: Evolver | None,
                 ledger: Ledger, lock=None):
        self.path = Path(path)
        self.agent = agent
        self.evolver = evolver
        self.read_only = ledger.read_only
        self._ledger = ledger
        ledger.redact_secrets(secrets_of(agent, evolver))
        self._lock = lock
        try:
            self._repo = HarnessRepo.open(self.path / self.REPO)
            self.config = RunConfig.model_validate(stored_config(ledger.get("config")))
            stored = ledger.get("schedule")
            self.schedule = None if stored is None else Schedule.model_validate(stored)
        except (RepoError, ValidationError) as err:
            self.close()
            raise RunError(f"{self.path} is damaged: {err}") from None
        self._tasks = tasks_from_json(ledger.get("tasks"))
        try:
            check_seal(ledger, self._repo, self.path, read_only=self.read_only)
        except RunError:
            self.close()
            raise
        if not self.read_only:
            reconcile(ledger, self._repo)

    # -- life cycle ---------------------------------------------------------------------
    @classmethod
    @renamed_keywords(config="run_config")
    def create(cls, path, *, agent: TaskAgent, evolver: Evolver | None = None,
               run_config: RunConfig | None = None, schedule: Schedule | None = None,
               agent_spec: dict | None = None, evolver_spec: dict | None = None,
               executor_spec: dict | None = None, baseline_dir=SEED_HARNESS) -> Run:
        """Create a run directory at ``path`` (which must not exist or be empty).

        The directory is built aside and moved into place at the end, so a run killed
        while being created leaves nothing at ``path``. ``agent_spec``/``evolver_spec``
        (see :mod:`gsme.plugins`) let :meth:`open` rebuild the agent and evolver on its
        own; without them, pass both to :meth:`open`. ``executor_spec`` is kept for
        :attr:`executor_spec` (``gsme resume`` rebuilds the executor). The test split is fixed now and
        committed by hash; it is scored once, by :func:`gsme.measure.finalize`. With
        ``run_config.learn_from``, the comparisons of earlier runs of the same world
        (``run_config.learn_match``) are read from that file now and kept in the run
        (:mod:`gsme.comparisons`).
        """
        refuse_credentials(agent_spec, "[agent]")
        refuse_credentials(evolver_spec, "[evolver]")
        refuse_credentials(executor_spec, "[executor]")
        run_config = checked_settings(run_config, RunConfig, "run_config")
        schedule = None if schedule is None else checked_settings(schedule, Schedule, "schedule")
        path = Path(path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise RunError(f"{path} exists and is not an empty folder; choose a new run "
                           "directory (to continue a run: gsme resume DIR)")
        tasks = checked_tasks(agent.tasks())
        if (agent.task_model is not None and getattr(evolver, "model", None) == agent.task_model
                and not run_config.allow_same_model):
            raise RunError(f"the evolver's model {agent.task_model!r} is the frozen task model; "
                           "the evolver must be another (a stronger) model, or set [run] "
                           "allow_same_model = true")
        world = comparisons.signature(agent, evolver)
        learned = (schema.empty("comparisons") if run_config.learn_from is None else
                   comparisons.relevant(comparisons.read(run_config.learn_from), signature=world,
                                        match=run_config.learn_match))
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.creating-", dir=path.parent))
        try:
            ledger = Ledger(staging / cls.LEDGER, create=True)
            ledger.redact_secrets(secrets_of(agent, evolver))
            ledger.put("config", run_config.model_dump(mode="json"))
            ledger.put("schedule", None if schedule is None else schedule.model_dump())
            ledger.put("agent", {"name": agent.name, "simulated": bool(agent.simulated),
                                 "spec": agent_spec, "task_model": agent.task_model,
                                 "frozen": list(agent.frozen)})
            ledger.put("evolver", {"name": getattr(evolver, "name", None),
                                   "spec": evolver_spec})
            ledger.put("executor", {"spec": executor_spec})
            ledger.put("tasks", tasks.to_json(orient="split", index=False))
            ledger.put("run_id", uuid.uuid4().hex[:12])
            ledger.put("learned_from", learned.to_json(orient="split", index=False))
            ledger.put("world", world)
            ledger.put("vocabulary", Vocabulary.default().to_dict())
            repo = HarnessRepo.init(staging / cls.REPO, baseline_dir=baseline_dir)
            ledger.append("candidates", repo.candidates())
            ledger.event("created", 0, n_train=int((tasks["split"] == "train").sum()),
                         n_test=int((tasks["split"] == "test").sum()),
                         test_commitment=test_commitment(tasks),
                         settings=seal.commitment(ledger))
            ledger.close()
            if path.exists():
                path.rmdir()
            staging.rename(path)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls.open(path, agent=agent, evolver=evolver)

    @classmethod
    def open(cls, path, *, agent: TaskAgent | None = None, evolver: Evolver | None = None,
             read_only: bool = False) -> Run:
        """Reopen a run; rebuild its agent/evolver from their stored specs when not given.

        ``read_only`` takes no lock and never writes (status and reports of a live or an
        archived run); such a run cannot score, evolve or seal. Opened for writing, git and
        the ledger are first brought back in step after a crash or a lost WAL
        (:func:`gsme._run_dir.reconcile`), and what a run killed while sealing left unwritten is written
        (:func:`gsme.seal.repair`).

        Raises
        ------
        RunError
            Not a run directory, damaged, its test split does not match the commitment
            made when it was created, or it shows tampering (:func:`gsme.seal.problems`:
            never reopened, rescored or sealed again).
        RunLockedError
            Another process holds the run (not raised with ``read_only``).
        """
        path = run_dir(path)
        lock = None if read_only else lock_dir(path / cls.LOCK)
        sandbox.register_run(path)  # hidden from every sandboxed trial
        try:
            ledger = Ledger(path / cls.LEDGER, read_only=read_only)
        except LedgerError as err:
            unlock_dir(lock)
            raise RunError(str(err)) from None
        try:
            missing = [k for k in ("config", "tasks", "agent", "vocabulary")
                       if ledger.get(k) is None]
            if missing:
                raise RunError(f"{path / cls.LEDGER} is damaged: it lacks {missing}")
            agent = agent or stored_agent(ledger, read_only)
            if evolver is None and not read_only:
                spec = (ledger.get("evolver") or {}).get("spec")
                evolver = plugins.build_evolver(spec) if spec is not None else None
            check_commitment(path, ledger, None if read_only else agent)
            return cls(path, agent=agent, evolver=evolver, ledger=ledger, lock=lock)
        except BaseException:
            ledger.close()
            unlock_dir(lock)
            raise

    def close(self) -> None:
        """Release the ledger and the directory lock (a closed run can be reopened)."""
        self._ledger.close()
        unlock_dir(self._lock)
        self._lock = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


    @property
    def vocabulary(self) -> Vocabulary:
        """The run's why vocabulary (the evolver may have added labels); assigning one
        stores it."""
        return Vocabulary.from_dict(self._ledger.get("vocabulary"))

    @vocabulary.setter
    def vocabulary(self, vocabulary: Vocabulary) -> None:
        self._writable()
        self._ledger.put("vocabulary", vocabulary.to_dict())


    # -- domain writes (the loop's steps) -----------------------------------------------
    def add_candidate(self, parents: list[str], *, patch: Patch | None = None,
                      round: int) -> tuple[str | None, str | None]:
        """Commit a new candidate of ``round``: with ``patch``, a mutation of the one parent;
        without, a recombination merging the other parents (archive elites) onto the first.

        Returns
        -------
        tuple
            ``(candidate, None)``, or ``(None, reason)`` when the patch does not apply or
            holds a secret of the run (:class:`~gsme.patches.PatchError`; nothing of it is
            written to git), the merge fails, or the run's agent cannot
            run the harness made (then nothing of it is kept).
        """
        self._writable()
        base, *others = parents
        if patch is None:
            name, reason = self._repo.recombine(base, others, round=round)
            return (None, reason) if name is None else self._added(name)
        if others:
            raise RunError(f"a mutation has one parent, got {list(parents)}")
        try:  # a patch holding a secret of the run never reaches git
            name = self._repo.add_mutation(base, patch, round=round,
                                           secrets=secrets_of(self.agent, self.evolver))
        except PatchError as err:
            return None, str(err)
        return self._added(name)

    def _added(self, name: str) -> tuple[str | None, str | None]:
        """Record the committed candidate ``name``, or discard it if it changes a frozen
        setting (:func:`gsme.patches.check_frozen`) or the agent refuses it."""
        row = self._repo.candidates([name])
        self._ledger.append("candidates", row)
        parent = schema.split_ids(row["parents"].iloc[0])[0]
        try:
            check_frozen(self.harness(parent), self.harness(name), self.frozen)
        except PatchError as err:
            self._discard(name)
            return None, str(err)
        folder = Path(tempfile.mkdtemp(prefix="gsme-check-", dir=scratch()))
        try:
            self.agent.check_harness(self.snapshot(name).write(folder / "harness"))
        except ValueError as err:
            self._discard(name)
            return None, f"the agent cannot run this harness: {err}"
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return name, None

    def record(self, table: str, rows, *, round: int | None) -> None:
        """Store what the loop made of ``round`` in ``table`` (one of :data:`RECORDED`).

        * ``diagnoses``, ``proposals``: the evolver's diagnoses; every proposal, committed
          or refused, with the reason (an empty frame stores nothing).
        * ``decisions``: the gate decisions (with ``kept``), each also noted on its
          candidate's git commit.
        * ``archive``: the archive after ``round`` (replacing a snapshot of the same round).
        * ``calls``: one evolver call, a dict (tokens, cost, ...): the evolver's log sink,
          ``functools.partial(run.record, "calls", round=r)``.
        * ``trials``: trial rows without transcripts (borrowed trials, or trials run
          elsewhere), checked first: the trials contract (:func:`gsme.schema.as_trials`;
          a graded ``score`` is kept), the run's candidates and tasks (each task on its
          own split), no key already recorded (a recorded trial is never replaced) and
          no test trial before the run is sealed.

        Raises
        ------
        RunError
            The run is read-only, or (but for calls and trials) sealed; an unknown table;
            trials naming an unknown candidate or task, a task on another split, a key
            already recorded, or the test split before the seal.
        FrameError
            Trials that break the trials contract (the message names the column and rows);
            decisions missing a column of their frame (one still naming its ``child`` column
            ``candidate`` is renamed, with a DeprecationWarning).
        """
        if table not in RECORDED:
            raise RunError(f"table must be one of {RECORDED}, got {table!r}")
        if table == "calls":
            self._ledger.add_call({**rows, "round": round})
            return
        if table == "trials":
            if self.read_only:
                raise RunError(f"run {self.path} is open read-only")
            self._ledger.append("trials", self._new_trials(rows).assign(round=round))
            return
        self._writable()
        if table == "decisions":
            rows = schema.require(rows, schema.columns("decisions"), "decisions")
        if table == "archive":
            self._ledger.delete_round("archive", round)
            self._ledger.append("archive", rows.assign(snapshot=round))
        elif not rows.empty:
            self._ledger.append(table, rows.assign(round=round))
        if table == "decisions":
            for row in rows.to_dict("records"):
                self._repo.annotate(row["child"], {"gate": row})
            self._check_history(rows, round)

    def _check_history(self, decided: pd.DataFrame, round: int | None) -> None:
        """Record the keep rule's check of the history against this run's comparisons
        (:func:`gsme.policy.history_check`) as a ``history_checked`` event; print one line
        when it drops the history."""
        past = self.comparisons(before_round=round)
        if past["own"].all():
            return
        check = policy.history_check(decided, past=past, keep=self.config.keep)
        earlier = self.events("history_checked")
        self._ledger.event("history_checked", round, **check)
        if not check["used"] and (earlier.empty or earlier["payload"].iloc[-1]["used"]):
            print(f"gsme: round {round}: the history of {check['runs']} earlier run(s) "
                  f"({check['comparisons']} comparisons) is dropped: this run's "
                  f"{check['current']} comparisons disagree with it (log-score gain "
                  f"{check['log_score_gain']:+.2f} per comparison, p = {check['p_value']:.3g} < "
                  f"{self.config.keep.history_alpha})", file=sys.stderr, flush=True)

    def _new_trials(self, rows: pd.DataFrame) -> pd.DataFrame:
        """``rows`` as a checked trials frame that :meth:`record` may add (see there)."""
        rows = schema.as_trials(rows)
        if rows.empty:
            return rows
        unknown = sorted(set(rows["candidate"]) - set(self.candidates()["candidate"]))
        if unknown:
            raise RunError(f"trials name unknown candidate(s) {unknown[:5]}; the run has "
                           f"{len(self.candidates())} candidates (run.candidates())")
        split_of = dict(zip(self._tasks["task_id"], self._tasks["split"]))
        wrong = [(t, s) for t, s in zip(rows["task_id"], rows["split"]) if split_of.get(t) != s]
        if wrong:
            told = ", ".join(f"{t!r} on {s!r} (the run has it "
                             f"{'on ' + repr(split_of[t]) if t in split_of else 'not at all'})"
                             for t, s in dict.fromkeys(wrong))
            raise RunError(f"trials name tasks the run does not hold on that split: {told[:400]}")
        if (rows["split"] == "test").any() and not self.sealed:
            raise RunError("trials on the test split are recorded only by the sealed test "
                           "(gsme.measure.finalize); this run is not sealed")
        held = self._ledger.recorded(list(zip(*(rows[c].tolist() for c in schema.TRIAL_KEY))))
        if held:
            keys = ", ".join("/".join(map(str, k)) for k in held)
            raise RunError(f"{len(held)} trial(s) already recorded (a recorded trial is never "
                           f"replaced): {keys[:300]}")
        return rows

    def mark(self, kind: str, round: int | None = None, **payload) -> str | None:
        """Record a step of the run's life (one of :data:`MARKED`; read back with
        :meth:`events`).

        * ``round_started`` (``parent=``): ``round`` begins and extends ``parent``. What an
          interrupted start of the same round left (its diagnoses, proposals and
          uncommitted candidates) is dropped first.
        * ``candidates_committed`` (``candidates=``, optionally ``failures=``: how many
          failing train trials of the parent the evolver read): these are all of
          ``round``'s candidates; a resumed round goes on from scoring them.
        * ``round_done``: ``round`` is complete (recorded once).
        * ``budget_reached`` (optionally ``reason=``: which dollar or hour budget the round
          would exceed): a budget was reached before ``round`` began.
        * ``sealing`` (``candidate=``): the sealed test of ``candidate`` begins, recorded
          once with the commits sealed and anchored outside the ledger
          (:func:`gsme.seal.begin`); returns the candidate being sealed (the first one
          marked).
        * ``sealed`` (``result=``, the rows :func:`gsme.measure.finalize` returns): the sealed
          result with the test trials' digest (once), then the seal tag
          (:func:`gsme.seal.finish`) and, with ``config.learn_from``, the run's
          comparisons appended to that file (each once, also when called again).

        Returns
        -------
        str or None
            The candidate being sealed for ``sealing``, else None.

        Raises
        ------
        RunError
            The run is read-only, an unknown kind, or a round step on a sealed run
            (:class:`SealedError`); ``round_started`` when the round's leftovers are scored.
        """
        if kind not in MARKED:
            raise RunError(f"kind must be one of {MARKED}, got {kind!r}")
        needed = {"round_started": "parent", "candidates_committed": "candidates"}.get(kind)
        if needed is not None and needed not in payload:
            raise RunError(f"mark({kind!r}, ...) needs {needed}=")
        if kind in ("sealing", "sealed"):
            if self.read_only:
                raise RunError(f"run {self.path} is open read-only; it cannot be sealed")
            return self._seal(kind, **payload)
        self._writable()
        if kind == "round_started":
            self._discard_round(round)
            self._ledger.event(kind, round, parent=payload["parent"])
        elif kind == "candidates_committed":
            self._ledger.event(kind, round, candidates=list(payload["candidates"]),
                               **{k: int(v) for k, v in payload.items() if k == "failures"})
        elif kind == "budget_reached" or self.rounds_done() < round:  # round_done once
            self._ledger.event(kind, round, spent=self.trials_spent(),
                               **{k: str(v) for k, v in payload.items() if k == "reason"})
        return None

    def _seal(self, kind: str, *, candidate: str | None = None,
              result: list[dict] | None = None) -> str | None:
        if kind == "sealing":
            sealing = self.events("sealing")
            if sealing.empty:
                if candidate is None:
                    raise RunError("mark('sealing', ...) needs candidate= when sealing begins")
                seal.begin(self._ledger, self._repo, candidate)
                return candidate
            return sealing["payload"].iloc[0]["candidate"]
        if self.sealed_result is None:
            if result is None or not self.sealed:
                raise RunError("mark('sealed', result=...) records the result of the sealing "
                               "begun with mark('sealing', candidate=...)")
            seal.finish(self._ledger, self._repo, result)
        if self.config.learn_from is not None:
            mine = self.comparisons()
            comparisons.append(self.config.learn_from, mine[mine["run"] == self.run_id])
        return None

    def add_tasks(self, tasks: pd.DataFrame, *, agent_spec: dict | None = None) -> list[str]:
        """Add train tasks to the run (its benchmark grew); return the ids added.

        ``tasks`` holds the run's task columns; rows whose ``task_id`` the run has are left
        as they are, every other row must be a ``train`` task: the test split, committed
        by hash when the run was created, never changes. Allowed on a sealed run, whose
        sealed result stays as it is (see :mod:`gsme.grow`). ``agent_spec`` replaces the
        stored agent spec (an agent that knows the new tasks) when a task is added: with
        nothing new, nothing is written. The addition is recorded
        (event ``tasks_added``) before the task table is written, so a process killed in
        between completes it when called again.

        Raises
        ------
        RunError
            Read-only run, columns that differ from the run's, a new task outside the
            train split or a repeated new id (named).
        """
        if self.read_only:
            raise RunError(f"run {self.path} is open read-only")
        fresh = tasks[~tasks["task_id"].astype(str).isin(self._tasks["task_id"])]
        if sorted(tasks.columns) != sorted(self._tasks.columns):
            raise RunError(f"new tasks need exactly the run's columns {list(self._tasks.columns)}, "
                           f"got {list(tasks.columns)}")
        bad = fresh.loc[fresh["split"] != "train", "task_id"].tolist()
        if bad or fresh["task_id"].duplicated().any():
            raise RunError(f"new tasks must be train tasks with distinct ids (the test split "
                           f"is sealed); got {bad or fresh['task_id'].tolist()}")
        refuse_credentials(agent_spec, "[agent]")
        ids = fresh["task_id"].astype(str).tolist()
        added = self.events("tasks_added")
        if ids and (added.empty or added["payload"].iloc[-1]["task_ids"] != ids):
            self._ledger.event("tasks_added", None, task_ids=ids, agent_spec=agent_spec)
        if ids and agent_spec is not None:
            self._ledger.put("agent", {**self._ledger.get("agent"), "spec": agent_spec,
                                       "name": self.agent.name})
        if ids:
            grown = pd.concat([self._tasks, fresh.astype({"task_id": str})[self._tasks.columns]],
                              ignore_index=True)
            self._ledger.put("tasks", grown.to_json(orient="split", index=False))
            self._tasks = grown
        return ids

    def _discard(self, candidate: str) -> None:
        """Remove a candidate that was never scored (its branch and row)."""
        if self._ledger.count_trials(candidate=candidate):
            raise RunError(f"candidate {candidate!r} has trials; scored candidates stay")
        self._repo.discard(candidate)
        self._ledger.delete_candidate(candidate)

    def _discard_round(self, round: int) -> None:
        """Drop what an interrupted ``round`` left before its candidates were committed."""
        for table in ("diagnoses", "proposals"):
            self._ledger.delete_round(table, round)
        stale = self._repo.candidates()
        stale = list(stale.loc[stale["round"] == round, "candidate"])
        scored = sorted(c for c in stale if self._ledger.count_trials(candidate=c))
        if scored:
            raise RunError(
                f"round {round} was started step by step and its candidates {scored} are "
                f"scored; finish it with evolve.credit(...) and evolve.insert(...) first")
        for name in reversed(stale):
            self._discard(name)

    # -- the sink scoring writes to -----------------------------------------------------
    def trial_sink(self) -> scoring.Sink:
        """Where :func:`gsme.scoring.execute` records trials and infrastructure failures.

        Raises
        ------
        RunError
            The run is read-only, or its agent was not rebuilt (it cannot score).
        """
        if isinstance(self.agent, AbsentAgent):
            self.agent.refuse()
        if self.read_only:
            raise RunError(f"run {self.path} is open read-only")
        return _TrialSink(self._ledger)

    def _writable(self) -> None:
        if self.read_only:
            raise RunError(f"run {self.path} is open read-only")
        if self.sealed:
            raise SealedError(
                f"run {self.path} is sealed (test scored for "
                f"{self.events('sealing')['payload'].iloc[0]['candidate']!r}); start a new "
                "run to evolve further")



class _TrialSink:
    """A run's ledger as :func:`gsme.scoring.execute` writes to it (:meth:`Run.trial_sink`)."""

    def __init__(self, ledger: Ledger):
        self._ledger = ledger

    def record_trials(self, rows: list[tuple[dict, str | None]]) -> None:
        """Commit trial rows with their transcripts, in one transaction."""
        self._ledger.add_trials(rows)

    def mark_infra_failed(self, keys: list[tuple], error: str) -> None:
        """Turn these trials into infrastructure failures (a failed health check)."""
        self._ledger.mark_infra_failed(keys, error)
        self._ledger.event("health_failed_after_batch", None, trials=len(keys))
