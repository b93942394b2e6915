"""Scoring: which trials a set of candidates still needs, and running them through an executor.

A candidate is never re-scored on a (task, split, k) slot it already holds a valid trial for.
A child whose new patches' env gates all reject a task behaves exactly as its parent there,
so it borrows the parent's trials on that task instead of running new ones (tree-aware score
borrowing); the gate and the beacon(s) come from the candidate's row, which git records
for exactly the patches the child adds over its first parent. A slot whose trial failed for infrastructure reasons is re-run, up to
``max_reruns`` more attempts (the validity gate).
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gsme import envgate, schema
from gsme.agents.base import Trajectory, TrialSpec, trial_row

if TYPE_CHECKING:
    from gsme.run import Run

HEALTH_TRIES = 3


class InfraError(RuntimeError):
    """The agent's environment failed its health check; nothing was scored."""


@dataclass(frozen=True)
class Plan:
    """The trials a scoring pass will run, and the parent trials it will borrow."""

    specs: list[TrialSpec]
    borrowed: pd.DataFrame


def plan(run: Run, candidates: list[str], *, split: str, k: int) -> Plan:
    """Work out the trials ``candidates`` still need on ``split`` at ``k`` repeats.

    Returns a :class:`Plan`: trial specs to run (missing slots, and the next attempt of
    slots whose last attempt was an infrastructure failure) and the rows to borrow.
    """
    tasks = run.tasks(split)
    existing = run.trials(split=split)
    cands = run.candidates().set_index("candidate")
    specs: list[TrialSpec] = []
    borrowed = []
    slots = pd.MultiIndex.from_product(
        [tasks["task_id"], range(k)], names=["task_id", "k"]
    ).to_frame(index=False)
    for cand in candidates:
        if cand not in cands.index:
            raise KeyError(f"unknown candidate {cand!r}; the run has {list(cands.index)}")
        mine = existing[existing["candidate"] == cand]
        todo = _open_slots(slots, mine, run.config.max_reruns)
        if todo.empty:
            continue
        row = cands.loc[cand]
        parent = _parent(row)
        if run.config.borrow and parent is not None and split == "train":
            free = ~envgate.parse(row["env_gate"] or "").mask(tasks)
            free_tasks = set(tasks.loc[free, "task_id"])
            lend = todo["task_id"].isin(free_tasks) & (todo["attempt"] == 0)
            rows = _borrow(existing, parent, cand, todo[lend])
            if len(rows):
                borrowed.append(rows)
                got = rows[["task_id", "k"]].drop_duplicates()
                todo = todo.merge(got, on=["task_id", "k"], how="left", indicator=True)
                todo = todo[todo["_merge"] == "left_only"].drop(columns="_merge")
        beacon = row["beacon"] or None
        specs += [
            TrialSpec(cand, t, split, int(kk), int(a), beacon)
            for t, kk, a in todo[["task_id", "k", "attempt"]].itertuples(index=False)
        ]
    lent = pd.concat(borrowed, ignore_index=True) if borrowed else pd.DataFrame()
    return Plan(specs=specs, borrowed=lent)


def execute(run: Run, specs: list[TrialSpec], *, executor=None, progress=True, round=0) -> int:
    """Run ``specs`` through ``executor`` (threads by default), committing each trial.

    With the default thread pool every trial is its own task and is committed as it
    completes. Any other executor (a Dask cluster, a process pool) receives chunks of
    ``config.remote_chunk`` trials, so the agent is shipped once per chunk rather than once
    per trial; a chunk is committed in one transaction when it completes. Harness
    directories are paths, so remote workers need the run directory on a shared filesystem.
    The agent's health check runs before and after each batch; a failed check after a batch
    marks that batch's trials as infrastructure failures, so they are re-run, never scored.

    Returns
    -------
    int
        The number of trials run.
    """
    if not specs:
        return 0
    own_pool = executor is None
    pool = executor or cf.ThreadPoolExecutor(max_workers=run.config.workers)
    chunk = 1 if own_pool else run.config.remote_chunk
    tasks = run.tasks().set_index("task_id")
    bar = _progress(len(specs), progress, desc=f"round {round}: scoring")
    try:
        size = max(run.config.batch_size, chunk)
        for start in range(0, len(specs), size):
            batch = specs[start : start + size]
            _require_health(run)
            futures = {
                pool.submit(_run_chunk, run.agent, [
                    (run.harness_dir(s.candidate), _task_record(tasks, s.task_id), s)
                    for s in part
                ], run.config.seed): part
                for part in (batch[i : i + chunk] for i in range(0, len(batch), chunk))
            }
            for future in cf.as_completed(futures):
                done = list(zip(futures[future], future.result(), strict=True))
                run.ledger.add_trials([(_row(spec, traj, round), traj.transcript)
                                       for spec, traj in done])
                bar.update(len(done))
            if not _healthy(run):
                run.ledger.mark_infra_failed(
                    [(s.candidate, s.task_id, s.split, s.k, s.attempt) for s in batch]
                )
                run.ledger.event("health_failed_after_batch", round, trials=len(batch))
    finally:
        bar.close()
        if own_pool:
            pool.shutdown()
    return len(specs)


def _row(spec: TrialSpec, traj: Trajectory, round: int) -> dict:
    ref = "/".join([spec.split, spec.candidate, spec.task_id, f"k{spec.k}a{spec.attempt}"])
    return {**trial_row(spec, traj, ref), "borrowed_from": None, "round": round}


def _run_chunk(agent, items, seed: int) -> list[Trajectory]:
    return [_run_one(agent, harness_dir, task, spec, seed) for harness_dir, task, spec in items]


def _run_one(agent, harness_dir, task: dict, spec: TrialSpec, seed: int) -> Trajectory:
    """Run one trial; an exception in the agent is an infrastructure failure, not a fail."""
    started = time.perf_counter()
    try:
        return agent.run(harness_dir, task, k=spec.k, attempt=spec.attempt, seed=seed)
    except Exception as err:  # noqa: BLE001 - an agent's crash is an infra failure, not a stop
        return Trajectory(
            passed=False, infra_ok=False, seconds=time.perf_counter() - started,
            error=f"{type(err).__name__}: {err}", transcript=f"agent raised {type(err).__name__}",
        )


def _open_slots(slots: pd.DataFrame, mine: pd.DataFrame, max_reruns: int) -> pd.DataFrame:
    """Slots without a valid trial whose next attempt is allowed, with that attempt number."""
    if mine.empty:
        return slots.assign(attempt=0)
    agg = mine.groupby(["task_id", "k"]).agg(
        valid=("infra_ok", "any"), attempts=("attempt", "max")
    ).reset_index()
    merged = slots.merge(agg, on=["task_id", "k"], how="left")
    fresh = merged["valid"].isna()
    rerun = (merged["valid"] == False) & (merged["attempts"] < max_reruns)
    merged["attempt"] = np.where(fresh, 0, merged["attempts"].fillna(-1) + 1).astype(np.int64)
    return merged.loc[fresh | rerun, ["task_id", "k", "attempt"]].reset_index(drop=True)


def _parent(row: pd.Series) -> str | None:
    parents = schema.split_ids(row["parents"])
    return parents[0] if parents else None


def _borrow(existing: pd.DataFrame, parent: str, cand: str, todo: pd.DataFrame) -> pd.DataFrame:
    src = existing[existing["candidate"] == parent].merge(
        todo[["task_id", "k"]], on=["task_id", "k"]
    )
    if src.empty:
        return src
    return src.assign(candidate=cand, borrowed_from=parent, activated=False)


def _task_record(tasks: pd.DataFrame, task_id: str) -> dict:
    record = tasks.loc[task_id].to_dict()
    record["task_id"] = task_id
    return record


def _healthy(run: Run) -> bool:
    try:
        return bool(run.agent.health_check())
    except Exception:  # noqa: BLE001 - a health check that raises is a failed health check
        return False


def _require_health(run: Run) -> None:
    for attempt in range(HEALTH_TRIES):
        if _healthy(run):
            return
        time.sleep(0.1 * 2**attempt)
    raise InfraError(
        f"the agent's health check failed {HEALTH_TRIES} times before scoring; every "
        "completed trial is in the ledger: fix the environment and resume the run"
    )


def _progress(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False)
