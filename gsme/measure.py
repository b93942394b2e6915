"""Measuring a run's candidates: passes of plan, borrow and execute until nothing is
wanted.

The loop's scoring step and the sealed test. Each pass asks the gate's design which
repeats the candidates still need (:func:`gsme.designs.wanted`; the fixed number of
repeats on the test split), plans them (:func:`gsme.scoring.plan_trials`: borrow a trial where a
scored candidate behaves identically, re-run an infrastructure failure), records the
borrowed rows and runs the rest (:func:`gsme.scoring.execute`), which write to the run's
trial sink (:meth:`gsme.run.Run.trial_sink`). Passes go on until a pass neither runs nor
borrows anything.

:func:`measure` runs the train split's trials and is what the loop calls; :func:`finalize` seals
the run: the baseline and the harness the policy reports, scored once on the test split.
The run stores (:class:`gsme.run.Run`); this module decides when and what to score.
"""

from __future__ import annotations

import pandas as pd

from gsme import designs, gates, parent_trials, policy, schema, scoring, stats
from gsme.run import Run, RunError, SealedError
from gsme.schema import BASELINE, SEALED_ROUND

__all__ = ["MAX_SCORING_PASSES", "finalize", "measure", "settle"]

MAX_SCORING_PASSES = 64
"""Passes before scoring gives up (a pass runs, borrows or re-runs trials)."""


def measure(run: Run, candidates, *, split: str = "train", executor=None, progress: bool = True,
            round: int = 0) -> pd.DataFrame:
    """Run the trials ``candidates`` still need on the train split; return their trials.

    The gate's design decides the repeats (:func:`gsme.designs.wanted`); trials are
    borrowed where a scored candidate behaves identically, and infrastructure failures
    are re-run. The test split is sealed: only :func:`finalize` scores it.

    Parameters
    ----------
    run : Run
        Open for writing and not sealed.
    candidates : str or list of str
        Candidate ids (each compared with its first parent).
    split : str
        ``"train"`` (``"test"`` is refused).
    executor : gsme.executors.Executor or concurrent.futures.Executor, optional
        Runs the trials (:mod:`gsme.executors.pool`; a plain ``concurrent.futures``
        executor is wrapped). Default: threads of ``config.workers`` (an agent that runs
        many trials at once: in this process).
    progress : bool
        Show a progress bar.
    round : int
        The round the trials are recorded in.

    Returns
    -------
    DataFrame
        The run's train trials of ``candidates`` (the trials frame with ``round``).

    Raises
    ------
    SealedError
        ``split="test"``, or the run is sealed.
    RunError
        The run is read-only, its agent cannot score, or a candidate is unknown.

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> trials = measure(run, "baseline", progress=False)
    >>> len(trials), trials["split"].unique().tolist()
    (49, ['train'])
    >>> measure(run, "baseline", split="test")
    Traceback (most recent call last):
    ...
    gsme.run.SealedError: the test split is sealed: it is scored only by measure.finalize(run)
    >>> run.close()
    """
    if split == "test":
        raise SealedError("the test split is sealed: it is scored only by measure.finalize(run)")
    if split not in schema.SPLITS:
        raise ValueError(f"split must be one of {schema.SPLITS}, got {split!r}")
    if run.read_only:
        raise RunError(f"run {run.path} is open read-only")
    if run.sealed:
        raise SealedError(f"run {run.path} is sealed; start a new run to evolve further")
    names = [candidates] if isinstance(candidates, str) else list(candidates)
    settle(run, names, split="train", label=f"round {round}: scoring", round=round,
           executor=executor, progress=progress)
    trials = run.trials(split="train")
    return trials[trials["candidate"].isin(names)].reset_index(drop=True)


def settle(run: Run, names: list[str], *, split: str, label: str, round: int, executor=None,
           progress: bool = True) -> None:
    """Score ``names`` on ``split`` until the design wants nothing more of them.

    The passes of :func:`score` without its checks of the run's state (growing a sealed
    run scores its train split, :mod:`gsme.grow`). On the train split each candidate is
    compared with its first parent (:func:`gsme.designs.wanted`); on the test split each
    gets the gate's ``k`` repeats of every task, and nothing is borrowed.

    Raises
    ------
    RunError
        The run's agent cannot score, a candidate is unknown, or scoring did not settle
        within :data:`MAX_SCORING_PASSES` passes.

    Examples
    --------
    >>> from gsme import sim
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> settle(run, ["baseline"], split="train", label="baseline", round=0, progress=False)
    >>> len(run.trials(split="train"))
    49
    >>> run.close()
    """
    sink = run.trial_sink()
    candidates = run.candidates()
    if not run.agent.honours_env_gates:  # then every patch acts on every task
        candidates = candidates.assign(env_gate="")
    unknown = sorted(set(names) - set(candidates["candidate"]))
    if unknown:
        raise RunError(f"unknown candidate(s) {unknown}; the run has "
                       f"{list(candidates['candidate'])}")
    tasks = run.tasks()
    gate = run.config.gate
    paired = parent_trials.pairs(candidates, names, gate=gate) if split == "train" else None
    run_config = run.config if split == "train" else run.config.model_copy(
        update={"borrow": False})
    pairs = lenders = None
    if paired is not None:
        pairs = paired[["child", "reference"]].rename(columns={"reference": "parent"})
        lenders = parent_trials.lenders(paired)
    for _ in range(MAX_SCORING_PASSES):
        trials = run.checked_trials(split=split)  # checked once; rows added since, alone
        if paired is not None:  # the activation gate first: an inactive child wants nothing
            seen = parent_trials.view(trials, paired, gate=gate)
            quiet = gates.silent(seen, pairs, tasks, split=split, gate=gate)
            if quiet.any():
                paired, pairs = paired[~quiet], pairs[~quiet]
                lenders = parent_trials.lenders(paired)
            wanted = parent_trials.unview(
                designs.wanted(seen, pairs, tasks, split=split, gate=gate), paired)
        else:
            wanted = scoring.wanted_slots(tasks, names, split=split, k=gate.k)
        todo = scoring.plan_trials(trials, candidates, tasks, wanted, run_config=run_config,
                                   lenders=lenders)
        if not todo.borrowed.empty:
            run.record("trials", todo.borrowed, round=round)
        if not todo.specs:
            if todo.borrowed.empty:
                return
            continue
        scoring.execute(todo.specs, agent=run.agent, harness=run.snapshot, sink=sink,
                        run_config=run.config, tasks=tasks, executor=executor,
                        progress=progress, label=label, round=round)
    raise RunError(f"scoring {names} did not settle after {MAX_SCORING_PASSES} passes")


def finalize(run: Run, *, executor=None, progress: bool = True) -> pd.DataFrame:
    """Seal the run: score the baseline and the reported harness on the test split once.

    The reported harness is the policy's choice (:func:`gsme.policy.reported`). Sealing
    is recorded before the first test trial, so a run killed while sealing resumes
    sealing the same harness; a second call returns the stored result and runs nothing.
    With ``config.learn_from``, the run's train comparisons are then appended to that
    file (never twice; nothing of the test split). The test trials are recorded in round
    :data:`gsme.schema.SEALED_ROUND`.

    Returns
    -------
    DataFrame
        One row per role: ``candidate, role`` (baseline or selected), ``split``,
        ``rate`` (the mean of per-task rates over valid repeats, as the paired test
        counts) and ``n_tasks``.

    Raises
    ------
    RunError
        The run is read-only and not sealed yet.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)
    >>> finalize(run, progress=False)[["candidate", "role", "split", "n_tasks"]]
      candidate      role split  n_tasks
    0  baseline  baseline  test        8
    1     c0001  selected  test        8
    >>> run.sealed
    True
    >>> run.close()
    """
    done = run.sealed_result
    if done is not None:
        if not run.read_only:
            run.mark("sealed")  # shares the comparisons a kill left unshared
        return done
    if run.read_only:
        raise RunError(f"run {run.path} is open read-only; it cannot be sealed")
    chosen = (run.mark("sealing") if run.sealed else
              run.mark("sealing", candidate=policy.reported(
                  run.archive(), run.trials(split="train"), policy=run.config.policy,
                  k=run.config.gate.k)))
    todo = [BASELINE] if chosen == BASELINE else [BASELINE, chosen]
    settle(run, todo, split="test", label="sealed test: scoring", round=SEALED_ROUND,
           executor=executor, progress=progress)
    rates = stats.task_rates(run.trials(split="test"), split="test")
    rates = rates[rates["candidate"].isin(todo)].groupby("candidate")["rate"]
    rows = [{"candidate": c, "role": "baseline" if c == BASELINE else "selected",
             "split": "test", "rate": float(rates.mean()[c]),
             "n_tasks": int(rates.count()[c])} for c in todo]
    if chosen == BASELINE:
        rows.append({**rows[0], "role": "selected"})
    run.mark("sealed", result=rows)
    return pd.DataFrame(rows)

