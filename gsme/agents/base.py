"""The task-agent interface every agent implements, and the one place trajectories become trials."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import schema
from gsme._renamed import renamed_keywords
from gsme.comparisons import digest

__all__ = ["TaskAgent", "Trajectory", "TrialSpec", "to_trials", "trial_row"]


@dataclass(frozen=True)
class Trajectory:
    """What one trial of one harness on one task produced.

    ``passed`` is the task grader's verdict and ``score`` its graded score in [0, 1] where
    it gives one (None: pass/fail only); ``infra_ok`` is False when the environment
    (not the agent) failed, so the trial must be re-run rather than scored. ``beacons``
    are the activation beacons of every patch whose code path ran. ``pathology`` is a
    ground-truth failure label where the agent knows one (the simulator); it is never shown
    to an evolver.

    See Also
    --------
    trial_row, to_trials : What it produced, as trials rows.

    Examples
    --------
    >>> traj = Trajectory(passed=False, infra_ok=False, error="container failed to start")
    >>> trial_row(TrialSpec("c1", "t1", "train", 0), traj, None)["passed"]
    False
    """

    passed: bool
    infra_ok: bool = True
    beacons: tuple[str, ...] = ()
    tokens: float = float("nan")
    cost_usd: float = float("nan")
    seconds: float = float("nan")
    transcript: str = ""
    error: str | None = None
    pathology: str | None = None
    score: float | None = None

    def __post_init__(self):
        if self.score is not None and not (
                isinstance(self.score, (int, float)) and not isinstance(self.score, bool)
                and 0.0 <= self.score <= 1.0):
            raise ValueError(f"Trajectory score must be a number in [0, 1] or None, got "
                             f"{self.score!r}")


@dataclass(frozen=True)
class TrialSpec:
    """One trial to run: which candidate, on which task, which repeat and which attempt.

    Examples
    --------
    >>> TrialSpec("c1", "t1", "train", repeat=2, beacon="verify")
    TrialSpec(candidate='c1', task_id='t1', split='train', repeat=2, attempt=0, beacon='verify')
    """

    candidate: str
    task_id: str
    split: str
    repeat: int
    attempt: int = 0
    beacon: str | None = None  # the candidate's own beacon(s), comma separated


class TaskAgent(abc.ABC):
    """A frozen task model inside a harness: runs one trial at a time.

    Subclasses implement :meth:`tasks` and :meth:`run`; :meth:`health_check`,
    :meth:`check_harness` and :meth:`run_many` are optional. Trials may run in threads,
    processes or on other machines, so an agent must be picklable and :meth:`run` safe to
    call concurrently. ``simulated`` is True for agents whose results are simulated, so every
    report can say so. ``honours_env_gates`` is True for agents that apply a patch only on
    the tasks its env gate admits (the gates in the harness's ``patches/*.toml``); only then
    does the loop borrow a trial where a candidate's own patches do not act. An agent that
    loads the whole harness on every task leaves it False, and every patch counts as acting
    on every task. ``task_model`` names the frozen model the agent runs (None where it has
    none to name); a run records it and no patch may change it. ``frozen`` lists the harness
    settings no patch may change, each ``"<file>:<key>"`` of a TOML file of the harness
    (``"config/agent.toml:model"``).

    Examples
    --------
    A toy agent whose one task passes when the harness's prompt asks for tests:

    >>> class Toy(TaskAgent):
    ...     name = "toy"
    ...     def tasks(self):
    ...         return pd.DataFrame({"task_id": ["t1"], "split": ["train"]})
    ...     def run(self, harness_dir, task, *, repeat, attempt, run_seed):
    ...         prompt = Path(harness_dir, "prompt", "system.md")
    ...         passed = prompt.is_file() and "test" in prompt.read_text()
    ...         return Trajectory(passed=passed, transcript="submit()")
    >>> Path("h/prompt").mkdir(parents=True)
    >>> _ = Path("h/prompt/system.md").write_text("Run the tests first.")
    >>> agent = Toy()
    >>> agent.run(Path("h"), agent.tasks().iloc[0], repeat=0, attempt=0, run_seed=0).passed
    True
    >>> agent.runs_many, agent.health_check(), agent.secrets()
    (False, True, {})
    """

    simulated: bool = False
    honours_env_gates: bool = False
    name: str = "agent"
    task_model: str | None = None
    frozen: tuple[str, ...] = ()

    @abc.abstractmethod
    def tasks(self) -> pd.DataFrame:
        """Tasks as a frame: ``task_id``, ``split`` and the feature columns env gates read."""

    @abc.abstractmethod
    def run(
        self, harness_dir: Path, task: Mapping, *, repeat: int, attempt: int, run_seed: int
    ) -> Trajectory:
        """Run ``task`` (a row of :meth:`tasks`) once under the harness at ``harness_dir``.

        ``harness_dir`` is a fresh copy of the candidate's harness made for this trial
        alone and removed after it; ``repeat`` is the repeat index, ``attempt`` counts
        re-runs after infrastructure failures, and ``run_seed`` is the run's seed (an agent
        that draws random numbers seeds them from these, so a trial is reproducible).
        """

    def run_many(
        self, harness: Mapping[str, str], trials: Sequence[tuple[Mapping, int, int]], *,
        run_seed: int
    ) -> list[Trajectory]:
        """Run many trials of one harness in one call (optional; trusted agents only).

        ``harness`` is the candidate's committed files (path → text), to be read, never
        written; ``trials`` holds ``(task, repeat, attempt)`` triples. Returns one
        trajectory per triple, in order, each exactly what :meth:`run` returns for it
        under a copy of those files. Scoring calls it, in its own process and instead of
        :meth:`run`, when the agent implements it (:attr:`runs_many`) and no other
        executor is given; it suits an agent that reads no file a trial could have changed
        (the simulator). An agent that runs untrusted code keeps to :meth:`run`, whose
        trials each get their own checked copy.
        """
        raise NotImplementedError(f"{type(self).__name__} runs one trial at a time (run)")

    @property
    def runs_many(self) -> bool:
        """True when this agent implements :meth:`run_many`."""
        return type(self).run_many is not TaskAgent.run_many

    def health_check(self) -> bool:
        """True when the environment is healthy enough to run trials."""
        return True

    def signature(self) -> dict[str, str]:
        """This agent's part of the world its runs measure (:func:`gsme.comparisons.signature`).

        ``harness`` (the agent's family and the settings that shape what a patch does;
        by default its class), ``task_model`` (``""`` when it names none) and ``suite`` (a
        digest of :meth:`tasks`). Comparisons of another world are not learned from.
        """
        return {"harness": type(self).__name__, "task_model": str(self.task_model or ""),
                "suite": digest(self.tasks().to_csv(index=False))}

    def secrets(self) -> dict[str, str]:
        """The secrets this agent hands its trials, by variable name, as set now.

        A run redacts their values from everything it stores (:mod:`gsme.redact`), so a
        trial that prints one leaves ``[REDACTED:NAME]`` instead. The default hands none.
        """
        return {}

    def check_harness(self, harness_dir: Path) -> None:
        """Raise ``ValueError`` naming the problem if this agent cannot run the harness.

        The loop calls it on every new candidate before scoring, so a patch whose files
        this agent's runtime rejects (an unknown middleware, a bad config value) is refused
        with its reason instead of failing every trial. The default accepts any harness.
        """


@renamed_keywords(traj="trajectory")
def trial_row(spec: TrialSpec, trajectory: Trajectory, ref: str | None) -> dict:
    """One trials row (a plain dict, unvalidated) for ``spec`` and the ``trajectory`` it
    produced; ``ref`` is where its transcript is stored (the row's ``trajectory``).

    ``activated`` is True when one of the candidate's own beacons (``spec.beacon``, comma
    separated for a recombination) is among the beacons that fired. An infrastructure
    failure never counts as a pass.

    Examples
    --------
    >>> spec = TrialSpec("c1", "t1", "train", 0, beacon="verify")
    >>> row = trial_row(spec, Trajectory(passed=True, beacons=("verify",)), None)
    >>> row["passed"], row["activated"], row["beacons"]
    (True, True, 'verify')
    >>> row = trial_row(spec, Trajectory(passed=True, infra_ok=False, error="timeout"), None)
    >>> row["passed"], row["infra_ok"], row["error"]
    (False, False, 'timeout')
    """
    own = schema.split_ids(spec.beacon)
    return {
        "candidate": spec.candidate,
        "task_id": spec.task_id,
        "split": spec.split,
        "repeat": int(spec.repeat),
        "attempt": int(spec.attempt),
        "passed": bool(trajectory.passed) and bool(trajectory.infra_ok),
        "infra_ok": bool(trajectory.infra_ok),
        "activated": any(b in trajectory.beacons for b in own),
        "beacons": schema.join_ids(trajectory.beacons),
        "tokens": float(trajectory.tokens),
        "cost_usd": float(trajectory.cost_usd),
        "seconds": float(trajectory.seconds),
        "pathology": trajectory.pathology,
        "trajectory": ref,
        "error": trajectory.error,
        "borrowed_from": None,
        "score": (np.nan if trajectory.score is None or not trajectory.infra_ok
                  else float(trajectory.score)),
    }


def to_trials(results: Iterable[tuple[TrialSpec, Trajectory, str | None]]) -> pd.DataFrame:
    """Turn ``(spec, trajectory, transcript_ref)`` triples into a validated trials frame.

    ``trajectory`` holds ``transcript_ref`` (where the transcript was stored), never the text.

    Returns
    -------
    DataFrame
        The trials columns of :mod:`gsme.schema`, one row per triple (see :func:`trial_row`).

    Examples
    --------
    >>> done = [(TrialSpec("c1", "t1", "train", 0, beacon="verify"),
    ...          Trajectory(passed=True, beacons=("verify",)), "transcripts/c1-t1-0.txt"),
    ...         (TrialSpec("c1", "t2", "train", 0, beacon="verify"),
    ...          Trajectory(passed=False), None)]
    >>> to_trials(done)[["task_id", "passed", "activated", "trajectory"]]
      task_id  passed  activated               trajectory
    0      t1    True       True  transcripts/c1-t1-0.txt
    1      t2   False      False                     None
    """
    rows = [trial_row(spec, traj, ref) for spec, traj, ref in results]
    if not rows:
        return schema.empty("trials")
    return schema.as_trials(pd.DataFrame(rows))
