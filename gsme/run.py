"""A run: one directory holding the harness git repository, the ledger and the sealed test.

``Run.create`` fixes the train/test split (with a hash commitment of the test task ids);
``Run.score`` runs the trials candidates still need; ``Run.finalize`` scores the baseline and
the selected harness on the sealed test split exactly once. Everything a run knows is in its
directory, so ``Run.open`` resumes a run that was killed at any moment.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pandas as pd

from gsme import archive as archive_lib
from gsme import schema, scoring, stats
from gsme.agents.base import TaskAgent
from gsme.evolvers.base import Evolver
from gsme.gitrepo import HarnessRepo
from gsme.ledger import Ledger
from gsme.vocabulary import Vocabulary

POLICIES = ("gated", "greedy", "peak")


class RunError(RuntimeError):
    """The run directory or the request is not usable; the message says what to do."""


class SealedError(RunError):
    """The run is sealed: its test split was scored, so nothing more may be added or scored."""


@dataclass(frozen=True)
class RunConfig:
    """Settings of one run. ``policy``: how children are kept (gated, greedy or peak)."""

    seed: int = 0
    k: int = 3
    policy: str = "gated"
    max_reruns: int = 2
    z_crit: float = 1.96
    reference: str = "normal"
    min_tasks: int = 5
    min_activations: int = 1
    max_dropped_frac: float = 0.2
    borrow: bool = True
    max_failures: int = 40
    explore: float = 0.0
    batch_size: int = 64
    workers: int = 4
    remote_chunk: int = 32

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.max_reruns < 0:
            raise ValueError(f"max_reruns must be >= 0, got {self.max_reruns}")

    @classmethod
    def from_dict(cls, values: dict) -> RunConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown run setting(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


class Run:
    """One evolution run, backed by its directory. Use :meth:`create` or :meth:`open`."""

    LEDGER = "ledger.sqlite"

    def __init__(self, path: Path, agent: TaskAgent, evolver: Evolver | None, ledger: Ledger):
        self.path = Path(path)
        self.agent = agent
        self.evolver = evolver
        self.ledger = ledger
        self.repo = HarnessRepo.open(self.path / "harness")
        self.config = RunConfig.from_dict(ledger.get("config"))
        self._tasks = _tasks_from_json(ledger.get("tasks"))
        # the round evolver calls are recorded with; gsme.evolve.run_round sets it
        self.round_in_progress: int | None = None
        if evolver is not None and hasattr(evolver, "on_call"):
            evolver.on_call = self._add_call

    def _add_call(self, record: dict) -> None:
        """Write one evolver call's record to the ledger with ``round_in_progress``."""
        self.ledger.add_call({**record, "round": self.round_in_progress})

    # -- life cycle ---------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path,
        *,
        agent: TaskAgent,
        evolver: Evolver | None = None,
        config: RunConfig | dict | None = None,
        agent_spec: dict | None = None,
        evolver_spec: dict | None = None,
    ) -> Run:
        """Create a run directory at ``path`` (which must not exist or be empty).

        ``agent_spec``/``evolver_spec`` (see :mod:`gsme.config`) let :meth:`open` rebuild
        the agent and evolver on its own; without them, pass them to :meth:`open`.
        """
        from gsme.config import check_no_secrets

        check_no_secrets(agent_spec, "agent")
        check_no_secrets(evolver_spec, "evolver")
        path = Path(path)
        if path.exists() and any(path.iterdir()):
            raise RunError(f"{path} exists and is not empty; choose a new run directory (to continue a run: gsme resume DIR)")
        config = _as_config(config)
        tasks = _checked_tasks(agent.tasks())
        path.mkdir(parents=True, exist_ok=True)
        ledger = Ledger(path / cls.LEDGER)
        ledger.put("config", asdict(config))
        ledger.put("agent", {"name": agent.name, "simulated": bool(agent.simulated),
                             "spec": agent_spec})
        ledger.put("evolver", {"name": getattr(evolver, "name", None), "spec": evolver_spec})
        ledger.put("tasks", tasks.to_json(orient="split", index=False))
        ledger.put("test_commitment", test_commitment(tasks))
        ledger.put("vocabulary", Vocabulary.default().to_dict())
        repo = HarnessRepo.init(path / "harness")
        ledger.append("candidates", repo.candidates())
        ledger.event("created", 0, n_train=int((tasks["split"] == "train").sum()),
                     n_test=int((tasks["split"] == "test").sum()))
        return cls(path, agent, evolver, ledger)

    @classmethod
    def open(cls, path, *, agent: TaskAgent | None = None, evolver: Evolver | None = None):
        """Reopen a run; rebuild its agent/evolver from their stored specs when not given."""
        from gsme import config as config_lib

        path = Path(path)
        if not (path / cls.LEDGER).is_file() or not (path / "harness" / ".git").exists():
            raise RunError(f"{path} is not a gsme run directory (no {cls.LEDGER} or harness/)")
        ledger = Ledger(path / cls.LEDGER)
        if ledger.get("config") is None:
            raise RunError(f"{path / cls.LEDGER} holds no run configuration: damaged run")
        if agent is None:
            stored = ledger.get("agent") or {}
            spec = stored.get("spec")
            agent = (config_lib.build_agent(spec) if spec is not None
                     else _AbsentAgent(stored, _tasks_from_json(ledger.get("tasks"))))
        if evolver is None:
            spec = (ledger.get("evolver") or {}).get("spec")
            evolver = config_lib.build_evolver(spec) if spec is not None else None
        commitment = test_commitment(_checked_tasks(agent.tasks()))
        if commitment != ledger.get("test_commitment"):
            raise RunError(
                "the agent's test split differs from the one sealed when the run was created "
                "(hash commitment mismatch); refusing to continue"
            )
        return cls(path, agent, evolver, ledger)

    # -- frames -------------------------------------------------------------------------
    def tasks(self, split: str | None = None) -> pd.DataFrame:
        """The run's tasks (``task_id, split`` and features), fixed when it was created."""
        if split is None:
            return self._tasks.copy()
        _check_split(split)
        return self._tasks[self._tasks["split"] == split].reset_index(drop=True)

    def trials(self, *, split: str | None = None, candidate: str | None = None) -> pd.DataFrame:
        """Trials in the ledger, with ``borrowed_from`` (provenance) and ``round`` columns."""
        clauses, params = [], []
        if split is not None:
            _check_split(split)
            clauses.append("split = ?")
            params.append(split)
        if candidate is not None:
            clauses.append("candidate = ?")
            params.append(candidate)
        return self.ledger.frame("trials", " AND ".join(clauses), tuple(params))

    def candidates(self) -> pd.DataFrame:
        """The candidates frame (the git repository is its source of truth)."""
        return self.ledger.frame("candidates").sort_values(["round", "candidate"],
                                                          ignore_index=True)

    def decisions(self) -> pd.DataFrame:
        """Every gate decision, with the ``round`` it was made in."""
        return self.ledger.frame("decisions")

    def diagnoses(self) -> pd.DataFrame:
        return self.ledger.frame("diagnoses")

    def archive(self, round: int | None = None) -> pd.DataFrame:
        """The archive after ``round`` (default: the latest snapshot)."""
        snaps = self.ledger.frame("archive")
        if snaps.empty:
            return archive_lib.empty()
        last = int(snaps["snapshot"].max()) if round is None else int(round)
        taken = snaps[snaps["snapshot"] <= last]
        if taken.empty:
            return archive_lib.empty()
        latest = taken[taken["snapshot"] == taken["snapshot"].max()]
        return latest.drop(columns="snapshot").reset_index(drop=True)

    def events(self, kind: str | None = None) -> pd.DataFrame:
        return self.ledger.events(kind)

    def transcript(self, ref: str) -> str:
        """The transcript stored under a trial's ``trajectory`` reference."""
        return self.ledger.transcript(ref)

    @property
    def vocabulary(self) -> Vocabulary:
        return Vocabulary.from_dict(self.ledger.get("vocabulary"))

    def save_vocabulary(self, vocabulary: Vocabulary) -> None:
        self.ledger.put("vocabulary", vocabulary.to_dict())

    @property
    def sealed(self) -> bool:
        return self.ledger.get("sealed_candidate") is not None

    def trials_spent(self) -> int:
        """Trials actually run (borrowed trials cost nothing)."""
        return self.ledger.count("trials", "borrowed_from IS NULL")

    def harness_dir(self, candidate: str) -> Path:
        """A checked-out working tree of ``candidate``'s harness (made once, then reused)."""
        target = self.path / "worktrees" / candidate
        stamp = target.with_suffix(".commit")
        if stamp.is_file() and target.is_dir():
            return target
        if target.exists():
            shutil.rmtree(target)
        self.repo.checkout(candidate, target)
        stamp.write_text(self.repo.commit_of(candidate))
        return target

    def discard(self, candidate: str) -> None:
        """Remove a candidate that was never scored (its branch, row and working tree)."""
        self._require_open()
        if self.ledger.count("trials", "candidate = ?", (candidate,)):
            raise RunError(f"candidate {candidate!r} has trials; scored candidates stay")
        self.repo.discard(candidate)
        self.ledger.delete("candidates", "candidate = ?", (candidate,))
        target = self.path / "worktrees" / candidate
        target.with_suffix(".commit").unlink(missing_ok=True)
        shutil.rmtree(target, ignore_errors=True)

    # -- scoring ------------------------------------------------------------------------
    def score(self, candidates, *, split: str = "train", k: int | None = None,
              executor=None, progress: bool = True, round: int = 0) -> pd.DataFrame:
        """Run the trials ``candidates`` still need on ``split``, with validity re-runs.

        Returns the candidates' trials on that split (borrowed ones included).
        """
        if split == "test":
            raise SealedError("the test split is sealed: it is scored only by run.finalize()")
        self._require_open()
        return self._score(_as_list(candidates), split=split, k=k or self.config.k,
                           executor=executor, progress=progress, round=round)

    def _score(self, candidates, *, split, k, executor, progress, round) -> pd.DataFrame:
        if isinstance(self.agent, _AbsentAgent):
            self.agent.run(None, None, k=k, attempt=0, seed=0)  # raises: nothing can run
        for _ in range(self.config.max_reruns + 1):
            todo = scoring.plan(self, candidates, split=split, k=k)
            if not todo.borrowed.empty:
                self.ledger.append("trials", todo.borrowed.assign(round=round))
            if not todo.specs:
                break
            scoring.execute(self, todo.specs, executor=executor, progress=progress, round=round)
        trials = self.trials(split=split)
        return trials[trials["candidate"].isin(candidates)].reset_index(drop=True)

    # -- sealed test --------------------------------------------------------------------
    def finalize(self, *, executor=None, progress: bool = True) -> pd.DataFrame:
        """Seal the run: score baseline and the selected harness on the test split once.

        The selected harness is the policy's choice (see :func:`gsme.evolve.selected`). A
        second call returns the stored result and runs nothing.

        Returns
        -------
        DataFrame
            One row per scored candidate: ``candidate, role, split, rate, n_tasks``
            (``rate``: the mean of per-task rates over valid repeats, as the paired test
            counts).
        """
        from gsme.evolve import selected

        stored = self.ledger.get("sealed_result")
        if stored is not None:
            return pd.DataFrame(stored)
        chosen = self.ledger.get("sealed_candidate") or selected(self)
        self.ledger.put("sealed_candidate", chosen)
        self.ledger.event("sealing", None, candidate=chosen)
        todo = ["baseline"] if chosen == "baseline" else ["baseline", chosen]
        trials = self._score(todo, split="test", k=self.config.k, executor=executor,
                             progress=progress, round=-1)
        rates = stats.task_rates(trials, split="test").groupby("candidate")["rate"]
        rows = [
            {"candidate": c, "role": "baseline" if c == "baseline" else "selected",
             "split": "test", "rate": float(rates.mean()[c]), "n_tasks": int(rates.count()[c])}
            for c in todo
        ]
        if chosen == "baseline":
            rows.append({**rows[0], "role": "selected"})
        self.ledger.put("sealed_result", rows)
        self.ledger.event("sealed", None, candidate=chosen)
        return pd.DataFrame(rows)

    def _require_open(self) -> None:
        if self.sealed:
            raise SealedError(
                f"run {self.path} is sealed (test scored for "
                f"{self.ledger.get('sealed_candidate')!r}); start a new run to evolve further"
            )

    def __repr__(self) -> str:
        kind = "simulated " if self.agent.simulated else ""
        return f"<gsme.Run {self.path} {kind}agent={self.agent.name!r} sealed={self.sealed}>"


class _AbsentAgent(TaskAgent):
    """Stands in for a custom agent that cannot be rebuilt: the run reads, never scores."""

    def __init__(self, stored: dict, tasks: pd.DataFrame):
        self.name = stored.get("name") or "agent"
        self.simulated = bool(stored.get("simulated"))
        self._tasks = tasks

    def tasks(self) -> pd.DataFrame:
        return self._tasks

    def run(self, harness_dir, task, *, k, attempt, seed):
        raise RunError(f"this run's agent ({self.name}) was built in Python and cannot be "
                       "rebuilt from the run directory; reopen with Run.open(path, agent=...)")


def test_commitment(tasks: pd.DataFrame) -> str:
    """SHA-256 over the sorted test task ids: the commitment recorded when a run is created."""
    ids = sorted(tasks.loc[tasks["split"] == "test", "task_id"].astype(str))
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def _checked_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(tasks, pd.DataFrame):
        raise TypeError(f"agent.tasks() must return a DataFrame, got {type(tasks).__name__}")
    missing = {"task_id", "split"} - set(tasks.columns)
    if missing:
        raise schema.FrameError(f"agent.tasks() is missing column(s) {sorted(missing)}")
    bad = ~tasks["split"].isin(schema.SPLITS)
    if bad.any():
        raise schema.FrameError(
            f"agent.tasks() column 'split' must be one of {schema.SPLITS}:\n{tasks[bad].head()}"
        )
    dup = tasks["task_id"].duplicated(keep=False)
    if dup.any():
        raise schema.FrameError(f"agent.tasks() repeats task ids:\n{tasks[dup].head()}")
    if not (tasks["split"] == "train").any():
        raise schema.FrameError("agent.tasks() has no train task")
    return tasks.drop(columns=[c for c in ("content",) if c in tasks.columns]).reset_index(
        drop=True
    )


def _tasks_from_json(text: str) -> pd.DataFrame:
    data = json.loads(text)
    out = pd.DataFrame(data["data"], columns=data["columns"])
    out["task_id"] = out["task_id"].astype(str)
    return out


def _as_config(config) -> RunConfig:
    if config is None:
        return RunConfig()
    if isinstance(config, dict):
        return RunConfig.from_dict(config)
    if isinstance(config, RunConfig):
        return config
    raise TypeError(f"config must be a RunConfig or dict, got {type(config).__name__}")


def _as_list(candidates) -> list[str]:
    return [candidates] if isinstance(candidates, str) else list(candidates)


def _check_split(split: str) -> None:
    if split not in schema.SPLITS:
        raise ValueError(f"split must be one of {schema.SPLITS}, got {split!r}")


