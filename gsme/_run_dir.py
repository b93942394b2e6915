"""The run directory on disk (:class:`gsme.run.Run` is built on it): its lock, the settings,
tasks and agent its ledger stores, what is checked when it opens (the test split's
commitment, the seal, git and the ledger in step) and the errors a run raises.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import stat
from pathlib import Path

import pandas as pd

from gsme import plugins, schema, seal
from gsme.agents.base import TaskAgent
from gsme.gitrepo import HarnessRepo, RepoError
from gsme.ledger import Ledger, LedgerError
from gsme.redact import key_kind
from gsme.settings import ConfigError, ValidationError, describe

__all__ = ["LEDGER", "LOCK", "REPO", "AbsentAgent", "RunError", "RunLockedError",
           "SealedError", "check_commitment", "check_seal", "check_split", "checked_settings",
           "checked_tasks", "frame_from_json", "lock_dir", "reconcile", "run_dir",
           "stored_agent", "stored_config", "tasks_from_json", "test_commitment",
           "unlock_dir", "verify"]

LEDGER = "ledger.sqlite"
REPO = "harness"
LOCK = "gsme.lock"


class RunError(RuntimeError):
    """The run directory or the request is not usable; the message says what to do.

    Examples
    --------
    >>> Run.open("nowhere")
    Traceback (most recent call last):
    ...
    gsme.run.RunError: nowhere is not a gsme run directory (no ledger.sqlite and harness/)
    """

    __module__ = "gsme.run"  # where it is documented and imported from


class RunLockedError(RunError):
    """Another process is writing to this run directory.

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> Run.open("run")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gsme.run.RunLockedError: run is in use by pid ...
    >>> run.close()
    """

    __module__ = "gsme.run"  # where it is documented and imported from


class SealedError(RunError):
    """The run is sealed: its test split was scored, so nothing more may be added or scored.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> from gsme.measure import measure
    >>> run = simulated_run("tiny", rounds=1)
    >>> measure(run, "baseline")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gsme.run.SealedError: run ... is sealed; start a new run to evolve further
    >>> run.close()
    """

    __module__ = "gsme.run"  # where it is documented and imported from


class AbsentAgent(TaskAgent):
    """Stands in for an agent that is not rebuilt: the run reads, never scores."""

    def __init__(self, stored: dict, tasks: pd.DataFrame, reason: str):
        self.name = stored.get("name") or "agent"
        self.simulated = bool(stored.get("simulated"))
        self._tasks = tasks
        self._reason = reason

    def tasks(self) -> pd.DataFrame:
        return self._tasks

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        self.refuse()

    def refuse(self):
        raise RunError(f"this run's agent ({self.name}) {self._reason}; reopen with "
                       "Run.open(path, agent=...) to score")



def run_dir(path) -> Path:
    """``path`` as a Path, or RunError unless it holds a run's ledger and repository."""
    path = Path(path)
    if not (path / LEDGER).is_file() or not (path / REPO).is_dir():
        raise RunError(f"{path} is not a gsme run directory (no {LEDGER} and {REPO}/)")
    return path


def test_commitment(tasks: pd.DataFrame) -> str:
    """SHA-256 over the sorted test task ids: the commitment recorded when a run is created.

    Examples
    --------
    >>> tasks = pd.DataFrame({"task_id": ["t1", "t2", "t3"], "split": ["test", "train", "test"]})
    >>> digest = test_commitment(tasks)
    >>> len(digest), digest == test_commitment(tasks.iloc[::-1])
    (64, True)
    """
    ids = sorted(tasks.loc[tasks["split"] == "test", "task_id"].astype(str))
    return hashlib.sha256("\n".join(ids).encode()).hexdigest()


def stored_agent(ledger: Ledger, read_only: bool) -> TaskAgent:
    """The agent rebuilt from its stored spec; for reading, a stand-in when it cannot be."""
    stored = ledger.get("agent") or {}
    tasks = tasks_from_json(ledger.get("tasks"))
    spec = stored.get("spec")
    if spec is None:
        return AbsentAgent(stored, tasks, "was built in Python and cannot be rebuilt "
                                           "from the run directory")
    try:
        return plugins.build_agent(spec)
    except ConfigError as err:
        if not read_only:
            raise
        return AbsentAgent(stored, tasks, f"cannot be rebuilt here ({err})")


def check_commitment(path: Path, ledger: Ledger, agent: TaskAgent | None) -> None:
    created = ledger.events("created")
    if created.empty:
        raise RunError(f"{path} has no creation event: damaged run")
    promised = created["payload"].iloc[0].get("test_commitment")
    held = test_commitment(tasks_from_json(ledger.get("tasks")))
    if held != promised:
        raise RunError("the ledger's test split differs from the one committed when the run "
                       "was created; refusing to continue")
    if agent is not None and test_commitment(checked_tasks(agent.tasks())) != promised:
        raise RunError("the agent's test split differs from the one sealed when the run was "
                       "created (hash commitment mismatch); refusing to continue")
    frozen = (ledger.get("agent") or {}).get("task_model")
    if agent is not None and frozen is not None and agent.task_model != frozen:
        raise RunError(f"this run's frozen task model is {frozen!r} but its agent now runs "
                       f"{agent.task_model!r}; the task model never changes within a run "
                       "(set it back: $GSME_TASK_MODEL or [agent] model)")


def lock_dir(path: Path):
    """Hold an exclusive lock on ``path`` for this process, or raise RunLockedError.

    The lock file is opened without following a symlink and must be a regular file, so a
    planted link or FIFO cannot make gsme write elsewhere or block.
    """
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        why = "it is a symlink" if err.errno == errno.ELOOP else err.strerror or str(err)
        raise RunError(f"cannot lock {path.parent} for writing ({path.name}: {why}); open "
                       "it with read_only=True to read it") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunError(f"cannot lock {path.parent} for writing ({path.name} is not a regular "
                       "file); remove it to open the run")
    handle = os.fdopen(fd, "r+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunLockedError(f"{path.parent} is in use by {holder}; wait for it to end or "
                             "stop it (gsme status works meanwhile)") from None
    except OSError as err:
        handle.close()
        raise RunError(f"cannot lock {path.parent} for writing ({err.strerror or err}; the "
                       "file system may not support locks); open it with read_only=True "
                       "to read it") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle


def unlock_dir(handle) -> None:
    if handle is not None and not handle.closed:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def checked_settings(value, model, name: str):
    if value is None:
        return model()
    if isinstance(value, model):
        return value
    if isinstance(value, dict):
        try:
            return model.model_validate(value)
        except ValidationError as err:
            raise ConfigError(describe(err, table=name)) from None
    raise TypeError(f"{name} must be a {model.__name__} or dict, got {type(value).__name__}")


def checked_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(tasks, pd.DataFrame):
        raise TypeError(f"agent.tasks() must return a DataFrame, got {type(tasks).__name__}")
    schema.require(tasks, ["task_id", "split"], "agent.tasks()")
    bad = ~tasks["split"].isin(schema.SPLITS)
    if bad.any():
        raise schema.FrameError(
            f"agent.tasks() column 'split' must be one of {schema.SPLITS}:\n{tasks[bad].head()}")
    dup = tasks["task_id"].duplicated(keep=False)
    if dup.any():
        raise schema.FrameError(f"agent.tasks() repeats task ids:\n{tasks[dup].head()}")
    if not (tasks["split"] == "train").any():
        raise schema.FrameError("agent.tasks() has no train task")
    keyed = [i for i, t in enumerate(tasks["task_id"].astype(str)) if key_kind(t)]
    if keyed:
        raise schema.FrameError(f"agent.tasks() has {len(keyed)} task id(s) shaped like a key "
                                f"(row {keyed[0]}); task ids are stored as they are, so they "
                                "may not hold credentials")
    out = tasks.drop(columns=[c for c in ("content",) if c in tasks.columns])
    return out.assign(task_id=out["task_id"].astype(str)).reset_index(drop=True)


def tasks_from_json(text: str) -> pd.DataFrame:
    out = frame_from_json(text)
    out["task_id"] = out["task_id"].astype(str)
    return out


def frame_from_json(text: str) -> pd.DataFrame:
    data = json.loads(text)
    return pd.DataFrame(data["data"], columns=data["columns"])


def check_split(split: str) -> None:
    if split not in schema.SPLITS:
        raise ValueError(f"split must be one of {schema.SPLITS}, got {split!r}")


def stored_config(config: dict) -> dict:
    """A run's stored config; a run made before 0.3.0 compared children with their
    parent's stored trials (``GateConfig.parent_trials``), and is read so."""
    gate = config.get("gate", {})
    if "parent_trials" in gate:
        return config
    return {**config, "gate": {**gate, "parent_trials": "stored"}}


def check_seal(ledger: Ledger, repo: HarnessRepo, path: Path, *, read_only: bool) -> None:
    """Refuse a ledger whose event chain or seal shows tampering (:mod:`gsme.seal`);
    for a writer, write what a run killed while sealing left unwritten (its anchors,
    its seal tag) from the chain's records. Evidence of a seal the chain does not
    hold (an anchor, a tag, test trials) is never sealed over."""
    found = seal.problems(ledger, repo)
    if set(found) <= seal.REPAIRABLE:
        if found and not read_only:
            seal.repair(ledger, repo)
        return
    evidence = [f for f in found if f not in seal.REPAIRABLE]
    raise RunError(f"{path} shows tampering: {evidence[0]}; `gsme verify "
                   f"{path}` lists what differs")


def reconcile(ledger: Ledger, repo: HarnessRepo) -> None:
    """Bring git and the ledger back in step after a crash or a lost WAL.

    Git moves first (a candidate's commit, then its row in the ledger; a branch is
    deleted, then the row), and a power loss under ``synchronous=NORMAL`` or a lost
    ``-wal`` file takes back the ledger's last transactions. So git may hold candidates
    the ledger never recorded (with their descendants), or lack a branch the ledger
    still lists. Before sealing, such candidates without a trial are discarded
    (descendants first) and such rows dropped; the rounds they belonged to are redone.
    What is done is recorded first, as a ``reconciled`` event. Candidates with trials
    are left as they are.
    """
    if not ledger.events("sealing").empty:  # sealed
        return
    in_git = repo.candidates().sort_values(["round", "candidate"], ascending=False)
    listed = set(ledger.frame("candidates")["candidate"])
    orphans = [c for c in in_git["candidate"] if c not in listed
               and not ledger.count_trials(candidate=c)]
    gone = [c for c in sorted(listed - set(in_git["candidate"]))
            if not ledger.count_trials(candidate=c)]
    if not orphans and not gone:
        return
    ledger.event("reconciled", None, discarded=orphans, dropped=gone)
    for name in orphans:
        repo.discard(name)
    for name in gone:
        ledger.delete_candidate(name)


def verify(path) -> list[str]:
    """What differs between a run directory's ledger, its event chain and its seal tag
    (:func:`gsme.seal.problems`); empty when nothing does. Takes no lock, writes nothing.

    Raises
    ------
    RunError
        Not a run directory, or one damaged past reading.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.close()
    >>> verify(run.path)
    []
    """
    path = run_dir(path)
    try:
        ledger = Ledger(path / LEDGER, read_only=True)
    except LedgerError as err:
        raise RunError(str(err)) from None
    try:
        return seal.problems(ledger, HarnessRepo.open(path / REPO))
    except RepoError as err:
        raise RunError(f"{path} is damaged: {err}") from None
    finally:
        ledger.close()
