"""Harbor as an executor: a scoring pass becomes Harbor jobs, read back as trials land.

(Over 600 lines because everything that follows one Harbor version, its job configuration,
its result files and how they map to trials, is kept in this one module.)

Follows Harbor 0.22.0 (harbor-framework/harbor, commit 39b85872597e; its ``JobConfig``,
``TrialResult`` and job folder). ``[executor] kind = "harbor"``; the settings are the
constructor's keyword arguments:

=======================  ==================================================================
``env``                  Harbor's environment type (:data:`ENVIRONMENTS`: docker, daytona, modal,
                         e2b, runloop, ...) or an environment import path ``module:Class``
``n_concurrent``         trials Harbor runs at once over the pass (default 4)
``dataset``              a registry dataset ``name@version`` (``terminal-bench@2.0``), or
``path``                 a local folder of task folders (exactly one of the two)
``agent_import_path``    the user's Harbor agent class, ``module:Class`` (required)
``model``                the agent's ``model_name`` (optional)
``jobs_dir``             where Harbor writes its jobs (default ``harbor-jobs``; from a
                         config file, ``<run directory>.harbor-jobs`` beside the run)
``harbor``               the ``harbor`` command (default ``"harbor"``)
``args``                 extra arguments of ``harbor jobs start`` (a list of strings)
``reward_key``           the ``verifier_result.rewards`` key that scores a trial
``threshold``            ``passed`` when the reward is at least this (default 1.0)
=======================  ==================================================================

**A pass as jobs.** Harbor runs every agent entry of a job on every task of it
(``n_attempts`` times). gsme gives each (candidate, split, repeat, attempt) wanted its own
agent entry whose ``kwargs`` hand the user's agent class the candidate's harness,
``harness_dir`` (a folder holding the candidate's committed files, under
``<jobs_dir>/.gsme/harness/``), and tag it (``gsme_candidate``, ``gsme_split``,
``gsme_repeat``, ``gsme_attempt``, ``gsme_harness``: the harness's content hash,
``gsme_run_seed``); ``n_attempts`` is 1. Entries that want the same tasks share a job (the
tasks filter is those task names), so a pass is as few jobs as its shape allows, run side
by side with ``n_concurrent`` shared out; Harbor's own retries are off (gsme's validity
gate re-runs infrastructure failures). Each trial Harbor finishes is mapped back to exactly
one slot by its ``result.json``'s agent kwargs and task name; a trial gsme did not ask for,
or a second one of a slot, is dropped with a line on standard error and never scored. Job
names are ``gsme-`` and a hash of the job's slots, harnesses, run seed and settings; the
config gsme writes and Harbor's output are in ``<jobs_dir>/.gsme/<job>.json`` and ``.log``.

**The agent class** receives ``harness_dir`` (and the ``gsme_*`` tags) as constructor
keyword arguments and runs the candidate's harness from it. It may report the activation
beacons that fired in ``AgentContext.metadata["beacons"]`` (a list); gsme reads them, and
``metadata["pathology"]``, back.

**A trial** (:func:`gsme.importers.terminal_bench.harbor_trial`): ``score`` is the reward,
``passed`` is ``score >= threshold``; as Harbor's ``reward_valid``, any exception the trial
or one of its steps recorded whose cause in Harbor's exception policy table is not the
agent's own (it used up its time or context, or refused) makes ``infra_ok`` False, so it
is re-run and never scored (:data:`gsme.importers.FAILURE_CLASSES`: the installed
Harbor's table, else a copy of 0.25.0's); tokens, ``cost_usd`` and seconds come from the result, the
transcript from the trial's ``agent/`` folder (one file verbatim; several, each under a
``== name ==`` line).

**Resume.** Before starting jobs, the finished trials of earlier gsme jobs in ``jobs_dir``
that match a slot of the pass (same slot, harness hash and run seed) are read, not run
again; a job of the pass whose folder exists and holds every such trial of its slots is
continued with ``harbor jobs resume -p``, the open slots of any other run as a new job. If
gsme dies (even by ``kill -9``) Harbor is sent SIGTERM by the kernel (``PR_SET_PDEATHSIG``,
set for the thread that started it) and stops; its cancelled trials are run again. Use one
``jobs_dir`` per run (a config file gives each run its own).

**What goes wrong, and what it becomes:**

* a bad setting, a ``harbor`` not found, a ``jobs_dir`` that is not a writable folder, a
  job that exits non-zero before starting any trial (its config was refused): one line
  (:class:`~gsme.settings.ConfigError`; the CLI exits 2);
* rewards without ``reward_key``: one line (:class:`~gsme.settings.ConfigError`);
* a malformed ``result.json``, a trial folder without one, a reward outside [0, 1], a job
  that ended (killed, crashed) or ran no trial for a slot: an infrastructure failure of
  that trial, naming the cause (re-run by the validity gate, never scored).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gsme.agents.base import TaskAgent, Trajectory, TrialSpec
from gsme.executors.base import Done, Executor, Snapshot
from gsme.importers import LogError
from gsme.importers.terminal_bench import harbor_trial
from gsme.redact import redact
from gsme.settings import ConfigError

__all__ = ["ENVIRONMENTS", "HARBOR_VERSION", "HarborExecutor"]

HARBOR_VERSION = "0.22.0"
"""The Harbor release whose job config and job folder this module follows."""

ENVIRONMENTS = ("docker", "daytona", "e2b", "modal", "runloop", "langsmith", "ec2", "gke",
                "ack", "openshift", "novita", "apple-container", "singularity", "islo",
                "tensorlake", "cwsandbox", "wandb", "use-computer", "cua-cloud", "blaxel",
                "opensandbox", "beam", "skypilot", "hf-sandbox", "hyperbrowser", "vercel")
"""Harbor 0.22's environment types (``EnvironmentType``)."""

POLL_SECONDS = 0.1
STOP_SECONDS = 30.0  # Harbor's grace to cancel its trials after SIGTERM, then SIGKILL
_RESERVED = {"-c", "--config", "--job-name", "-o", "--jobs-dir", "-k", "--n-attempts",
             "--max-retries", "-p", "--job-path"}
_MAX_TRANSCRIPT = 1 << 20
# the launcher: Harbor gets SIGTERM when the thread of gsme that started it dies
_TIE = ("import ctypes, os, signal, sys; ctypes.CDLL(None).prctl(1, signal.SIGTERM); "
        "os.getppid() == int(sys.argv[1]) or sys.exit(1); os.execvp(sys.argv[2], sys.argv[2:])")


class HarborExecutor(Executor):
    """Runs a scoring pass's trials as Harbor jobs (see the module docstring).

    Examples
    --------
    >>> ex = HarborExecutor(env="docker", dataset="terminal-bench@2.0",
    ...                     agent_import_path="my_agent:HarnessAgent", harbor=sys.executable)
    >>> ex.whole_pass, ex.n_concurrent
    (True, 4)
    >>> HarborExecutor(env="docker", path="tasks", agent_import_path="a:B",
    ...                harbor=sys.executable)
    Traceback (most recent call last):
    ...
    gsme.settings.ConfigError: [executor] path: no such folder: tasks
    """

    whole_pass = True

    def __init__(self, *, env: str = "docker", n_concurrent: int = 4, dataset: str | None = None,
                 path: str | None = None, agent_import_path: str | None = None,
                 model: str | None = None, jobs_dir: str = "harbor-jobs",
                 harbor: str = "harbor", args: list[str] = (), reward_key: str = "reward",
                 threshold: float = 1.0):
        if not isinstance(env, str) or not (env in ENVIRONMENTS or _is_import_path(env)):
            _bad("env", f"must be one of {list(ENVIRONMENTS)} or an import path "
                        f"'module:Class'", env)
        if isinstance(n_concurrent, bool) or not isinstance(n_concurrent, int) or n_concurrent < 1:
            _bad("n_concurrent", "must be an integer >= 1", n_concurrent)
        if (dataset is None) == (path is None):
            raise ConfigError("[executor] give exactly one of dataset (name@version) and path "
                              "(a folder of task folders)")
        if dataset is not None and (not isinstance(dataset, str) or not dataset.split("@")[0]):
            _bad("dataset", "must be a dataset name, optionally @version", dataset)
        if path is not None and not Path(path).is_dir():
            raise ConfigError(f"[executor] path: no such folder: {path}")
        if not isinstance(agent_import_path, str) or not _is_import_path(agent_import_path):
            _bad("agent_import_path", "must name the Harbor agent class, 'module:Class'",
                 agent_import_path)
        if model is not None and not isinstance(model, str):
            _bad("model", "must be a model name", model)
        if not isinstance(harbor, str) or shutil.which(harbor) is None:
            raise ConfigError(f"[executor] harbor: no executable {harbor!r} found (install "
                              f"Harbor >= {HARBOR_VERSION}: pip install 'gsme[harbor]')")
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            _bad("args", "must be a list of strings", args)
        reserved = sorted({a.split("=")[0] for a in args} & _RESERVED)
        if reserved:
            _bad("args", f"may not set {reserved} (gsme sets them)", list(args))
        if not isinstance(reward_key, str) or not reward_key:
            _bad("reward_key", "must be a key of the verifier's rewards", reward_key)
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
                0.0 <= threshold <= 1.0):
            _bad("threshold", "must be a number in [0, 1]", threshold)
        self.env, self.n_concurrent, self.model = env, n_concurrent, model
        self.dataset = dataset
        self.path = None if path is None else str(Path(path).resolve())
        self.agent_import_path = agent_import_path
        self.jobs_dir = Path(jobs_dir).resolve()
        self.harbor, self.args = harbor, list(args)
        self.reward_key, self.threshold = reward_key, float(threshold)
        self._running: list[_Job] = []

    # ------------------------------------------------------------------ the pass

    def stream(self, specs: list[TrialSpec], *, agent: TaskAgent,
               snapshots: Mapping[str, Snapshot], tasks: Mapping[str, dict], run_seed: int,
               patience: Callable[[], float | None]) -> Iterator[Done]:
        if not specs:
            return
        own = self._own_folder()
        hashes = {c: _harness_hash(snapshots[c]) for c in dict.fromkeys(s.candidate
                                                                          for s in specs)}
        book = _Book({_slot(s): s for s in specs}, hashes, int(run_seed))
        bar = _bar(len(specs))
        try:
            planned = self._plan(own, specs, book, snapshots)
            harvested = self._harvest(own, book)
            if harvested:
                _tally(book, bar, harvested)
                yield harvested
            jobs = []
            for job in planned:  # resumed if its folder holds all it finished, else anew
                left = [spec for slot, spec in job.slots.items() if slot in book.open]
                if not (job.folder / "config.json").is_file() or not left or any(
                        book.source.get(slot, job.name) != job.name for slot in job.slots):
                    job = None
                jobs += [job] if job else self._plan(own, left, book, snapshots)
            yield from self._follow(_shared(jobs, self.n_concurrent), book, patience, bar)
        finally:
            self.close()
            bar.close()

    def close(self) -> None:
        """Stop the Harbor jobs still running (SIGTERM, then SIGKILL after a grace)."""
        for job in self._running:
            job.stop()
        self._running = []

    def _own_folder(self) -> Path:
        own = self.jobs_dir / ".gsme"
        try:
            (own / "harness").mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=own, prefix=".probe-"):
                pass
        except OSError as err:
            raise ConfigError(f"[executor] jobs_dir: cannot write in {self.jobs_dir} "
                              f"({err.strerror or err})") from None
        return own

    def _harvest(self, own: Path, book: _Book) -> Done:
        """Finished trials of earlier gsme jobs in ``jobs_dir`` that fill a slot of the pass."""
        done: Done = []
        wanted = {book.entry(s) for s in book.open.values()}
        for config in sorted(own.glob("gsme-*.json")):
            try:
                agents = json.loads(config.read_text())["agents"]
                entries = {_entry(a["kwargs"]) for a in agents}
            except (OSError, ValueError, KeyError, TypeError):
                continue  # not a config gsme wrote intact: nothing of it is trusted
            if not entries & wanted:
                continue
            folder = self.jobs_dir / config.stem
            for path in sorted(_trial_dirs(folder)):
                trial = Path(path)
                data = _result(trial)
                if data is None:
                    continue  # unfinished: Harbor runs it again if the job is resumed
                book.seen.add(path)  # nothing of it is new if the job is resumed
                if not isinstance(data, dict) or _cancelled(data):
                    continue  # malformed or cancelled: run again
                spec = book.match(_kwargs(data, trial), data.get("task_name"))
                if isinstance(spec, TrialSpec):
                    book.source[_slot(spec)] = config.stem
                    done.append((spec, self._trajectory(data, trial)))
        return done

    def _plan(self, own: Path, specs: list[TrialSpec], book: _Book,
              snapshots: Mapping[str, Snapshot]) -> list[_Job]:
        """The jobs running ``specs``: one per set of tasks wanted, its agent entries."""
        by_entry: dict[tuple, list[str]] = {}
        for spec in specs:
            by_entry.setdefault(book.entry(spec), []).append(spec.task_id)
        by_tasks: dict[tuple, list[tuple]] = {}
        for entry, task_ids in by_entry.items():
            by_tasks.setdefault(tuple(sorted(set(task_ids))), []).append(entry)
        jobs = []
        for task_ids, entries in by_tasks.items():
            entries.sort()
            agents = [self._agent(entry, self._harness_dir(own, snapshots[entry[0]],
                                                           entry[4])) for entry in entries]
            settings = [self.env, self.dataset, self.path, self.agent_import_path, self.model,
                        self.args, self.reward_key]
            name = "gsme-" + hashlib.sha256(json.dumps(
                [task_ids, entries, settings], default=str).encode()).hexdigest()[:16]
            slots = {_slot(spec): spec for spec in (TrialSpec(e[0], t, e[1], e[2], e[3])
                                                    for e in entries for t in task_ids)}
            jobs.append(_Job(name, self.jobs_dir / name, own / f"{name}.json",
                             own / f"{name}.log", slots, self._config(name, task_ids, agents)))
        return jobs

    def _agent(self, entry: tuple, harness_dir: Path) -> dict:
        candidate, split, repeat, attempt, digest, run_seed = entry
        agent = {"import_path": self.agent_import_path,
                 "kwargs": {"harness_dir": str(harness_dir), "gsme_candidate": candidate,
                            "gsme_split": split, "gsme_repeat": repeat,
                            "gsme_attempt": attempt, "gsme_harness": digest,
                            "gsme_run_seed": run_seed}}
        if self.model is not None:
            agent["model_name"] = self.model
        return agent

    def _config(self, name: str, task_ids: tuple, agents: list[dict]) -> dict:
        """Harbor's ``JobConfig`` for one job (``n_concurrent_trials`` is set at launch)."""
        filters = {"task_names": [re.sub(r"([*?\[])", r"[\1]", t) for t in task_ids]}
        if self.path is not None:
            dataset = {"path": self.path, **filters}
        else:
            dataset_name, _, version = self.dataset.partition("@")
            dataset = {"name": dataset_name, **filters}
            if version:
                dataset["ref" if "/" in dataset_name else "version"] = version
        environment = ({"type": self.env} if self.env in ENVIRONMENTS
                       else {"import_path": self.env})
        return {"job_name": name, "jobs_dir": str(self.jobs_dir), "n_attempts": 1,
                "quiet": True, "retry": {"max_retries": 0}, "environment": environment,
                "agents": agents, "datasets": [dataset]}

    @staticmethod
    def _harness_dir(own: Path, snapshot: Snapshot, digest: str) -> Path:
        target = own / "harness" / digest
        if not target.is_dir():
            staging = Path(tempfile.mkdtemp(prefix=".new-", dir=target.parent))
            snapshot.write(staging / "h")
            try:
                (staging / "h").rename(target)
            except OSError:  # written meanwhile by another pass: the same files
                pass
            shutil.rmtree(staging, ignore_errors=True)
        return target

    # ------------------------------------------------------------------ following jobs

    def _follow(self, jobs: list[_Job], book: _Book, patience, bar) -> Iterator[Done]:
        pending, last = list(jobs), time.monotonic()
        while pending or self._running:
            used = sum(job.share for job in self._running)
            while pending and (not self._running or used + pending[0].share <= self.n_concurrent):
                job = pending.pop(0)
                job.start(self.harbor, self.args)
                self._running.append(job)
                used += job.share
            done: Done = []
            for job in list(self._running):
                code = job.proc.poll()
                done += self._scan(job, book, final=code is not None)
                if code is not None:
                    self._running.remove(job)
                    done += self._unfinished(job, book, code)
            _tally(book, bar, done, running=sum(j.running for j in self._running))
            wait = patience()
            if done or (wait is not None and time.monotonic() - last >= wait):
                last = time.monotonic()
                yield done
            elif self._running:
                time.sleep(POLL_SECONDS)

    def _scan(self, job: _Job, book: _Book, *, final: bool) -> Done:
        """The trials of ``job`` finished since the last look (all left, when ``final``)."""
        done: Done = []
        job.running = 0
        for path in _trial_dirs(job.folder):
            if path in book.seen:
                continue
            trial = Path(path)
            data = _result(trial)
            if not isinstance(data, dict) and not final:
                job.running += 1  # running, or its result.json half written
                continue
            book.seen.add(path)
            if isinstance(data, dict):
                spec = book.match(_kwargs(data, trial), data.get("task_name"))
            else:
                spec = book.match(_trial_kwargs(trial), _trial_task(trial))
            if not isinstance(spec, TrialSpec):
                _drop(trial, spec)
            elif isinstance(data, dict):
                done.append((spec, self._trajectory(data, trial)))
            else:
                cause = ("has no result.json" if data is None
                         else f"has a malformed result.json ({data})")
                done.append((spec, _failure(f"Harbor trial {trial.name} {cause}")))
        return done

    def _unfinished(self, job: _Job, book: _Book, code: int) -> Done:
        """Infrastructure failures for the slots of an ended job that no trial filled."""
        left = [book.open[slot] for slot in sorted(job.slots) if slot in book.open]
        if not left:
            return []
        tail = job.tail()
        if code != 0 and not job.resumed and not any(_trial_dirs(job.folder)):
            raise ConfigError(f"[executor] harbor jobs start exited with code {code} before "
                              f"starting any trial: {tail} (its output: {job.log})")
        cause = (f"Harbor job {job.name} exited with code {code} before this trial finished"
                 + (f": {tail}" if tail else "") if code != 0 else
                 f"Harbor job {job.name} ran no trial of this slot (is the task in the dataset?)")
        for spec in left:
            book.close(_slot(spec))
        return [(spec, _failure(cause)) for spec in left]

    def _trajectory(self, data: dict, trial: Path) -> Trajectory:
        try:
            row = harbor_trial(data, source=trial, reward_key=self.reward_key,
                               threshold=self.threshold)
        except LogError as err:
            row = {"passed": False, "infra_ok": False, "error": f"malformed result.json: {err}"}
        if row is None:
            row = {"passed": False, "infra_ok": False,
                   "error": f"Harbor trial {trial.name} finished with neither a reward nor an "
                            "exception"}
        meta = ((data.get("agent_result") or {}).get("metadata") or {}
                if isinstance(data.get("agent_result"), dict) else {})
        beacons = meta.get("beacons") if isinstance(meta, dict) else None
        pathology = meta.get("pathology") if isinstance(meta, dict) else None
        nan = float("nan")
        return Trajectory(
            passed=bool(row["passed"]), infra_ok=bool(row["infra_ok"]),
            beacons=tuple(str(b) for b in beacons) if isinstance(beacons, list) else (),
            tokens=row.get("tokens", nan), cost_usd=row.get("cost_usd", nan),
            seconds=row.get("seconds", nan), transcript=_transcript(trial), error=row["error"],
            pathology=pathology if isinstance(pathology, str) else None,
            score=row["score"] if row["infra_ok"] else None)


# ---------------------------------------------------------------------------- internals


@dataclass
class _Book:
    """The slots of a pass still open, and how each finished trial maps to one."""

    open: dict[str, TrialSpec]
    hashes: dict[str, str]
    run_seed: int
    seen: set[str] = field(default_factory=set)  # trial folders read
    source: dict[str, str] = field(default_factory=dict)  # harvested slot -> its job
    closed: set[str] = field(default_factory=set)
    failed: int = 0
    spent: float = 0.0

    def entry(self, spec: TrialSpec) -> tuple:
        return (spec.candidate, spec.split, spec.repeat, spec.attempt,
                self.hashes[spec.candidate], self.run_seed)

    def match(self, kwargs, task) -> TrialSpec | str:
        """The open slot a trial fills (now closed), or why it fills none."""
        if not isinstance(kwargs, dict) or _entry(kwargs) is None or not isinstance(task, str):
            return "no gsme tags in its agent kwargs, or no task name"
        candidate, split, repeat, attempt, digest, run_seed = _entry(kwargs)
        slot = _slot(TrialSpec(candidate, task, split, repeat, attempt))
        if slot in self.closed:
            return f"a second trial of slot {slot}"
        spec = self.open.get(slot)
        if spec is None or self.hashes.get(candidate) != digest or run_seed != self.run_seed:
            return f"a trial gsme did not ask for ({slot})"
        self.close(slot)
        return spec

    def close(self, slot: str) -> None:
        del self.open[slot]
        self.closed.add(slot)


@dataclass
class _Job:
    """One Harbor job of a pass and its process."""

    name: str
    folder: Path
    config_path: Path
    log: Path
    slots: dict[str, TrialSpec]
    config: dict
    share: int = 1
    running: int = 0
    resumed: bool = False
    proc: subprocess.Popen | None = None

    def start(self, harbor: str, args: list[str]) -> None:
        if (self.folder / "config.json").is_file():  # an earlier gsme started it
            self.resumed = True
            argv = [harbor, "jobs", "resume", "-p", str(self.folder)]
        else:
            self.config_path.write_text(json.dumps({**self.config,
                                                    "n_concurrent_trials": self.share},
                                                   indent=2))
            argv = [harbor, "jobs", "start", "-c", str(self.config_path), *args]
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _TIE, str(os.getpid()), *argv],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def tail(self) -> str:
        """The last line Harbor wrote, redacted."""
        try:
            with open(self.log, "rb") as log:
                log.seek(max(0, log.seek(0, 2) - 4000))
                lines = log.read().decode("utf-8", "replace").strip().splitlines()
        except OSError:
            return ""
        return redact(lines[-1].strip())[:300] if lines else ""


def _failure(error: str) -> Trajectory:
    return Trajectory(passed=False, infra_ok=False, error=error)


def _tally(book: _Book, bar, done: Done, running: int = 0) -> None:
    """Count ``done`` on the pass's progress bar: trials done, running, failed, $ spent."""
    book.failed += sum(not traj.infra_ok for _, traj in done)
    book.spent += sum(traj.cost_usd for _, traj in done if traj.cost_usd == traj.cost_usd)
    bar.update(len(done))
    bar.set_postfix(running=running, failed=book.failed, spent=f"${book.spent:.2f}",
                    refresh=False)


def _shared(jobs: list[_Job], n_concurrent: int) -> list[_Job]:
    """``jobs``, largest first, each given its share of ``n_concurrent`` (at least 1)."""
    total = sum(len(job.slots) for job in jobs)
    for job in jobs:
        job.share = max(1, min(len(job.slots), round(n_concurrent * len(job.slots) / total)))
    return sorted(jobs, key=lambda job: -len(job.slots))


def _bad(key: str, rule: str, value) -> None:
    raise ConfigError(f"[executor] {key} {rule}, got {value!r}")


def _is_import_path(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*", text) is not None


def _slot(spec: TrialSpec) -> str:
    return f"{spec.split}/{spec.candidate}/{spec.task_id}/r{spec.repeat}a{spec.attempt}"


def _entry(kwargs: Mapping) -> tuple | None:
    """``(candidate, split, repeat, attempt, harness hash, run seed)`` from an agent's
    kwargs, or None when they are not gsme's."""
    try:
        out = (kwargs["gsme_candidate"], kwargs["gsme_split"], kwargs["gsme_repeat"],
               kwargs["gsme_attempt"], kwargs["gsme_harness"], kwargs["gsme_run_seed"])
    except (KeyError, TypeError):
        return None
    kinds = (str, str, int, int, str, int)
    ok = all(isinstance(v, k) and not isinstance(v, bool) for v, k in zip(out, kinds))
    return out if ok else None


def _harness_hash(snapshot: Snapshot) -> str:
    digest = hashlib.sha256()
    for rel in sorted(snapshot.files):
        digest.update(json.dumps([rel, rel in snapshot.executables,
                                  snapshot.files[rel]]).encode())
    return digest.hexdigest()[:20]


def _trial_dirs(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [e.path for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _read(path: Path, limit: int) -> str | None:
    """A regular file's text (at most ``limit`` bytes), never through a link; None if none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return file.read(limit).decode("utf-8", "replace")


def _result(trial: Path) -> dict | Exception | None:
    """A trial's parsed ``result.json``; None when it has none, the error when unreadable."""
    text = _read(trial / "result.json", 64 << 20)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError as err:
        return ValueError(str(err)[:200])
    return data if isinstance(data, dict) else ValueError("not a JSON object")


def _kwargs(data: dict, trial: Path):
    try:
        return data["config"]["agent"]["kwargs"]
    except (KeyError, TypeError):
        return _trial_kwargs(trial)


def _trial_config(trial: Path) -> dict:
    try:
        data = json.loads(_read(trial / "config.json", 1 << 20) or "")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _trial_kwargs(trial: Path):
    try:
        return _trial_config(trial)["agent"]["kwargs"]
    except (KeyError, TypeError):
        return None


def _trial_task(trial: Path) -> str | None:
    """The task a trial folder ran, from its ``config.json`` (Harbor names the folder
    ``<task name, cut at 32>__<random>``)."""
    task = _trial_config(trial).get("task")
    found = task.get("path") or task.get("name") if isinstance(task, dict) else None
    return str(found).rstrip("/").rsplit("/", 1)[-1] if found else None


def _cancelled(data: dict) -> bool:
    info = data.get("exception_info")
    return isinstance(info, dict) and info.get("exception_type") == "CancelledError"


def _transcript(trial: Path) -> str:
    folders = [trial / "agent", *sorted((trial / "steps").glob("*/agent"))]
    files = sorted(p for folder in folders if folder.is_dir() and not folder.is_symlink()
                   for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    if len(files) == 1:
        return _read(files[0], _MAX_TRANSCRIPT) or ""
    parts, size = [], 0
    for path in files:
        text = _read(path, _MAX_TRANSCRIPT - size) or ""
        parts.append(f"== {path.relative_to(trial)} ==\n{text}")
        size += len(text)
        if size >= _MAX_TRANSCRIPT:
            break
    return "\n".join(parts)


def _drop(trial: Path, why: str) -> None:
    _write(f"gsme: harbor: dropped trial {trial} ({why}); it is not scored")


def _write(line: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(line, file=sys.stderr)


def _bar(total: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="harbor", disable=None, leave=False)
