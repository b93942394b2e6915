"""Make a GEPA run's claims honest: re-test its choice sealed, re-gate what it accepted.

GEPA decides "better" twice, and neither is a test. A proposal is accepted when the sum of
its scores over a 3-example minibatch beats its parent's (one rollout each: the exact
one-sided p of such a comparison is at least 1/8, so none could pass a 2.5% test). The
candidate it returns is the one with the best mean val score, on the val set that also
chose it. :func:`retest` measures that choice where it can be measured — on a sealed
split disjoint from GEPA's train and val sets, fixed and hash-committed when the re-test is
created, every task run K times on both sides through the user's own adapter and scored
once — and sets it beside GEPA's val claim; :func:`regate_accepts` says which accepted
proposals had any evidence. Both judge with gsme's own test
(:func:`gsme.compare.compare`, :func:`gsme.gates.significance_gate`).

Trials are run by :func:`run_trials`: an exception from the adapter is an
infrastructure failure, re-run up to ``GateConfig.max_reruns`` times and never scored
(GEPA itself would score it 0).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from gsme import compare, gates, io, schema, scoring
from gsme.importers.gepa import GepaRun
from gsme.settings import ConfigError, GateConfig, RunConfig

__all__ = ["Retest", "items_of", "regate_accepts", "retest", "run_trials", "task_ids"]

RETEST_COLUMNS = ["candidate", "measurement", "split", "selection_biased", "n_tasks", "k",
                  "rate_parent", "rate_child", "delta_pp", "se_pp", "z", "p_one_sided",
                  "p_holm", "decision"]
CLAIM, SEALED = "GEPA's val claim", "sealed measurement"


def items_of(data) -> list:
    """The items of a GEPA train or val set: a sequence's, or a ``DataLoader``'s
    (``fetch(all_ids())``, in its order).

    Examples
    --------
    >>> from gepa.core.data_loader import ListDataLoader
    >>> items_of(ListDataLoader([{"task_id": "a"}])), items_of(({"task_id": "b"},))
    ([{'task_id': 'a'}], [{'task_id': 'b'}])
    """
    if hasattr(data, "all_ids") and hasattr(data, "fetch"):
        return list(data.fetch(list(data.all_ids())))
    return list(data)


def task_ids(items, task_id: Callable | None = None) -> list[str]:
    """The task id of each item (of a sequence or a GEPA ``DataLoader``): ``task_id(item)``,
    else its ``task_id`` key or attribute.

    Examples
    --------
    >>> task_ids([{"task_id": "a"}, {"task_id": "b"}])
    ['a', 'b']
    """
    out = []
    for item in items_of(items):
        if task_id is not None:
            value = task_id(item)
        elif isinstance(item, Mapping) or hasattr(item, "__getitem__") and not isinstance(
                item, str):
            try:
                value = item["task_id"]
            except (KeyError, TypeError, IndexError):
                value = getattr(item, "task_id", None)
        else:
            value = getattr(item, "task_id", None)
        if value is None:
            raise ConfigError(f"item {str(item)[:80]!r} has no task_id; pass task_id= (a "
                              "function of an item returning its id)")
        out.append(str(value))
    if len(set(out)) != len(out):
        dup = sorted({i for i in out if out.count(i) > 1})
        raise ConfigError(f"task ids repeat: {dup[:10]}")
    return out


def run_trials(adapter, texts: Mapping[str, Mapping[str, str]], items: Mapping[str, object],
               want: Callable[[pd.DataFrame], pd.DataFrame], *, trials: pd.DataFrame | None = None,
               gate: GateConfig | None = None, threshold: float = 1.0) -> pd.DataFrame:
    """Run what ``want`` asks for through a GEPA adapter until it asks for nothing new.

    ``want(trials)`` returns ``candidate, task_id, split, repeats`` (as
    :func:`gsme.designs.wanted` does); :func:`gsme.scoring.plan_trials` turns it into the trials
    missing and the infrastructure re-runs the validity gate allows. Each candidate's trials
    of one step go to ``adapter.evaluate(batch, texts[candidate])`` in one call; an
    exception is an infrastructure failure of every trial in that call.

    Parameters
    ----------
    adapter
        Anything with GEPA's ``evaluate(batch, candidate, capture_traces=False)``.
    texts : mapping
        Candidate id → its component texts.
    items : mapping
        Task id → the item the adapter takes.
    want : callable
    trials : DataFrame, optional
        Trials already run (never run again).
    gate : GateConfig, optional
        Its ``max_reruns``.
    threshold : float
        A score at least this passes.

    Returns
    -------
    DataFrame
        ``trials`` with the new trials appended (a trials frame with ``score``).

    Examples
    --------
    Two repeats of the seed on three tasks of the offline demo world (SIMULATED):

    >>> from gsme.integrations import gepa_demo as demo
    >>> items = {t["task_id"]: t for t in demo.make_tasks(3, prefix="s")}
    >>> want = lambda trials: pd.DataFrame({"candidate": "baseline", "task_id": list(items),
    ...                                     "split": "test", "repeats": 2})
    >>> trials = run_trials(demo.DemoAdapter(seed=0), {"baseline": demo.SEED_CANDIDATE}, items,
    ...                     want)
    >>> trials.groupby("task_id")["passed"].sum().to_dict()
    {'s000': 2, 's001': 2, 's002': 0}
    """
    trials = schema.as_trials(schema.empty("trials").assign(score=np.nan)) if trials is None \
        else trials
    names = list(texts)
    candidates = pd.DataFrame({"candidate": names, "parents": "", "kind": "baseline",
                               "beacon": None})
    run_config = RunConfig(gate=gate or GateConfig(), borrow=False)
    while True:
        wanted = want(trials)
        tasks = wanted[["task_id", "split"]].drop_duplicates()
        specs = scoring.plan_trials(trials, candidates, tasks, wanted,
                                    run_config=run_config).specs
        if not specs:
            return trials
        rows = []
        for name in dict.fromkeys(s.candidate for s in specs):
            mine = [s for s in specs if s.candidate == name]
            rows.extend(_evaluate(adapter, texts[name], items, mine, threshold))
        trials = schema.as_trials(pd.concat([trials, pd.DataFrame(rows)], ignore_index=True))


def _evaluate(adapter, candidate, items, specs, threshold) -> list[dict]:
    base = [{"candidate": s.candidate, "task_id": s.task_id, "split": s.split,
             "repeat": s.repeat, "attempt": s.attempt, "activated": True} for s in specs]
    try:
        result = adapter.evaluate([items[s.task_id] for s in specs], dict(candidate),
                                  capture_traces=False)
        scores = [float(x) for x in result.scores]
        if len(scores) != len(specs):
            raise ValueError(f"evaluate returned {len(scores)} scores for {len(specs)} items")
    except Exception as err:  # noqa: BLE001 (an infrastructure failure: re-run, never scored)
        error = f"{type(err).__name__}: {err}"[:300]
        return [{**row, "passed": False, "infra_ok": False, "score": np.nan, "error": error}
                for row in base]
    return [{**row, "passed": score >= threshold, "infra_ok": True, "score": score}
            for row, score in zip(base, scores)]


def _fixed(k: int, gate: GateConfig | None) -> GateConfig:
    gate = gate or GateConfig()
    return gate.model_copy(update={"design": "fixed", "k": k, "k_max": max(k, gate.k_max)})


def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode("utf-8")).hexdigest()


class Retest(NamedTuple):
    """What :func:`retest` returns; ``print(result)`` shows claim beside measurement.

    Attributes
    ----------
    table : DataFrame
        Two rows per re-tested candidate (:data:`RETEST_COLUMNS`): ``measurement`` is
        ``"GEPA's val claim"`` (GEPA's own val scores against the seed's, K = 1, the split
        that chose it: ``selection_biased`` True) or ``"sealed measurement"`` (the sealed
        split at K repeats); ``delta_pp, se_pp, z, p_one_sided`` are
        :func:`gsme.compare.compare`'s, fixed design. ``p_holm`` is a sealed row's p
        Holm-adjusted over every candidate re-tested (``members="front"``: the family of
        sealed tests; its own p when it is alone; NaN for GEPA's claims, which are not
        tests) and a sealed ``decision`` credits only when ``p_holm`` is at most the
        gate's level; a claim's ``decision`` is compare's.
    trials : DataFrame
        The sealed trials (split ``"test"``).
    stored : bool
        True when the result was read back from an earlier call (nothing was run).

    Examples
    --------
    >>> import contextlib, io
    >>> import gepa
    >>> from gsme.importers.gepa import read_gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> train, val = demo.make_tasks(8), demo.make_tasks(6, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=train,
    ...                            valset=val, adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0, targeted=1.0),
    ...                            max_metric_calls=60, run_dir="run", seed=0)
    >>> run = read_gepa("run", result=result.to_dict(), repo=False,
    ...                 val_ids=[v["task_id"] for v in val])
    >>> result = retest(run, adapter=demo.DemoAdapter(seed=1),
    ...                 sealed=demo.make_tasks(10, prefix="s"), trainset=train, valset=val,
    ...                 path="retest", k=2)
    >>> print(result)
        gepa-3  GEPA's val claim    Δ  +50.0 pp  n=6   K=1  z=  2.24  p=0.125  inconclusive  (selection-biased)
        gepa-3  sealed measurement  Δ  +25.0 pp  n=10  K=2  z=  1.86  p=0.125  inconclusive
    >>> len(result.trials), result.stored
    (40, False)
    """

    table: pd.DataFrame
    trials: pd.DataFrame
    stored: bool

    def __str__(self) -> str:
        family = int((self.table["measurement"] == SEALED).sum())
        lines = []
        for name, rows in self.table.groupby("candidate", sort=False):
            for _, r in rows.iterrows():
                holm = (f" (Holm {r['p_holm']:.3g})" if family > 1 and r["measurement"] == SEALED
                        else "")
                lines.append(f"{name:>10}  {r['measurement']:<19} Δ {r['delta_pp']:+6.1f} pp  "
                             f"n={r['n_tasks']:<3} K={r['k']}  z={r['z']:6.2f}  "
                             f"p={r['p_one_sided']:.3g}{holm}  {r['decision']}"
                             + ("  (selection-biased)" if r["selection_biased"] else ""))
        if family > 1:
            lines.append(f"sealed p-values: Holm over {family} candidates (family-wise level "
                         "of one test); a credit needs its Holm p at the level")
        return "\n".join(lines)


def retest(run: GepaRun, *, adapter, sealed: Sequence, trainset: Sequence, valset: Sequence,
           path, k: int = 3, members: str = "best", task_id: Callable | None = None,
           gate: GateConfig | None = None, threshold: float = 1.0) -> Retest:
    """Re-test GEPA's choice against its seed on a sealed split, once.

    The first call fixes the sealed split (its task ids, their SHA-256 and those of the
    candidates' texts go to ``<path>/retest.json``), runs the seed and each candidate
    ``k`` times on every sealed task through ``adapter`` (paired by task; infrastructure
    exceptions re-run, never scored) and stores the trials and the table. A later call
    with the same split returns what was stored and runs nothing; a different split or
    different candidates are refused.

    Parameters
    ----------
    run : GepaRun
        :func:`gsme.importers.gepa.read_gepa` of the run (``result=`` given, for GEPA's
        val claim).
    adapter
        The user's GEPA adapter (``evaluate(batch, candidate, capture_traces=False)``).
    sealed, trainset, valset : sequence of items
        The sealed split, and GEPA's train and val sets: a sealed task id found in either
        is refused.
    path : path
        The re-test's folder.
    k : int
        Repeats per task and side.
    members : {"best", "front"}
        GEPA's choice only, or also every other member of its Pareto front (their sealed
        tests Holm-corrected as one family: ``p_holm``).
    task_id : callable, optional
        Item → task id (default: its ``task_id`` key or attribute).
    gate : GateConfig, optional
        The level and reference; the design is fixed at K = ``k``.
    threshold : float
        A score at least this passes.

    Returns
    -------
    Retest

    Examples
    --------
    A small offline GEPA run (SIMULATED: :mod:`gsme.integrations.gepa_demo`), its choice
    re-tested on 10 sealed tasks:

    >>> import contextlib, io
    >>> import gepa
    >>> from gsme.importers.gepa import read_gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> train, val = demo.make_tasks(8), demo.make_tasks(6, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=train,
    ...                            valset=val, adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0, targeted=1.0),
    ...                            max_metric_calls=60, run_dir="run", seed=0)
    >>> run = read_gepa("run", result=result.to_dict(), repo=False,
    ...                 val_ids=[v["task_id"] for v in val])
    >>> run.best
    'gepa-3'
    >>> sealed = demo.make_tasks(10, prefix="s")
    >>> result = retest(run, adapter=demo.DemoAdapter(seed=1), sealed=sealed, trainset=train,
    ...                 valset=val, path="retest", k=2)
    >>> result.table[["measurement", "n_tasks", "k", "delta_pp", "decision"]]
              measurement  n_tasks  k  delta_pp      decision
    0    GEPA's val claim        6  1      50.0  inconclusive
    1  sealed measurement       10  2      25.0  inconclusive
    >>> retest(run, adapter=demo.DemoAdapter(seed=1), sealed=sealed, trainset=train,
    ...        valset=val, path="retest", k=2).stored  # scored once: read back
    True
    """
    if members not in ("best", "front"):
        raise ConfigError(f"members must be 'best' or 'front', got {members!r}")
    ids = task_ids(sealed, task_id)
    seen = set(task_ids(trainset, task_id)) | set(task_ids(valset, task_id))
    overlap = sorted(set(ids) & seen)
    if overlap:
        raise ConfigError(f"sealed tasks {overlap[:10]} are in GEPA's train or val set; a "
                          "sealed split must be disjoint from both")
    front = run.candidates.loc[run.candidates["pareto"], "candidate"].tolist()
    chosen = [run.best] + ([c for c in front if c not in (run.best, schema.BASELINE)]
                           if members == "front" else [])
    if run.best == schema.BASELINE:
        raise ConfigError("GEPA chose its seed: there is no change to re-test")
    texts = {name: run.texts[name] for name in [schema.BASELINE, *chosen]}
    sealed = items_of(sealed)
    commit = {"sealed_ids": sorted(ids), "sealed_sha256": _digest(sorted(ids)), "k": k,
              "candidates": {n: _digest(t) for n, t in texts.items()}}
    folder = Path(path)
    record = folder / "retest.json"
    if record.is_file():
        stored = json.loads(record.read_text())
        if stored["sealed_sha256"] != commit["sealed_sha256"]:
            raise ConfigError(f"{record} fixed a sealed split of {len(stored['sealed_ids'])} "
                              f"tasks (sha256 {stored['sealed_sha256'][:12]}); a re-test is "
                              "scored once, on that split only")
        if stored["candidates"] != commit["candidates"] or stored["k"] != k:
            raise ConfigError(f"{record} re-tests other candidates or another k; start a new "
                              "re-test folder")
        if (folder / "table.csv").is_file():
            return Retest(pd.read_csv(folder / "table.csv"),
                          io.read_trials(folder / "trials.csv"), True)
    else:
        folder.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(commit, indent=1, sort_keys=True))
    sealed_gate = _fixed(k, gate)
    by_id = dict(zip(ids, sealed))
    wanted = pd.DataFrame([{"candidate": n, "task_id": t, "split": "test", "repeats": k}
                           for n in texts for t in ids])
    trials = run_trials(adapter, texts, by_id, lambda _: wanted, gate=sealed_gate,
                        threshold=threshold)
    rows = []
    for name in chosen:
        rows.append(_row(run.trials, name, CLAIM, "train", _fixed(1, gate), True))
        rows.append(_row(trials, name, SEALED, "test", sealed_gate, False))
    table = _holm(pd.DataFrame(rows), sealed_gate.alpha)[RETEST_COLUMNS]
    io.write_trials(trials, folder / "trials.csv")
    table.to_csv(folder / "table.csv", index=False)
    return Retest(table, trials, False)


def _holm(table: pd.DataFrame, level: float) -> pd.DataFrame:
    """``p_holm`` over the sealed rows (statsmodels' Holm step-down); their credit needs it."""
    from statsmodels.stats.multitest import multipletests

    sealed = table["measurement"] == SEALED
    table = table.assign(p_holm=np.nan)
    table.loc[sealed, "p_holm"] = multipletests(table.loc[sealed, "p_one_sided"],
                                                method="holm")[1]
    lost = sealed & (table["decision"] == "credit") & (table["p_holm"] > level)
    table.loc[lost, "decision"] = "inconclusive"
    return table


def _row(trials, name, measurement, split, gate, biased) -> dict:
    row = compare.compare(trials, parent=schema.BASELINE, child=name, split=split,
                          gate=gate).iloc[0]
    return {"candidate": name, "measurement": measurement, "split": split,
            "selection_biased": biased,
            **{c: row[c] for c in RETEST_COLUMNS[4:] if c != "p_holm"}}


def regate_accepts(run: GepaRun, *, gate: GateConfig | None = None) -> pd.DataFrame:
    """GEPA's minibatch comparisons judged by gsme's test: which had any evidence?

    Each proposal in ``run.iterations`` compared its child with its parent on the same
    minibatch, one rollout each. Here that pair is tested per task with
    :func:`gsme.gates.significance_gate` (exact sign-flip p when fewer than
    ``gate.exact_below`` tasks changed, as always; ``min_tasks`` lowered to 2 so that a
    3-example minibatch gets its p rather than "too few tasks").

    Parameters
    ----------
    run : GepaRun
    gate : GateConfig, optional
        The level (``alpha``) and reference.

    Returns
    -------
    DataFrame
        One row per proposal: ``iteration, kind, parent, child, accepted, n_tasks,
        sum_before, sum_after, delta_pp, p_one_sided`` (exact where few tasks changed),
        ``level`` (the gate's one-sided α) and ``evidence`` (``p_one_sided <= level``).

    Examples
    --------
    >>> import contextlib, io
    >>> import gepa
    >>> from gsme.importers.gepa import read_gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> train, val = demo.make_tasks(8), demo.make_tasks(6, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=train,
    ...                            valset=val, adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0, targeted=1.0),
    ...                            max_metric_calls=60, run_dir="run", seed=0)
    >>> run = read_gepa("run", result=result.to_dict(), repo=False,
    ...                 val_ids=[v["task_id"] for v in val])
    >>> regate_accepts(run)[["iteration", "accepted", "n_tasks", "p_one_sided", "evidence"]].head(3)
       iteration  accepted  n_tasks  p_one_sided  evidence
    0          1      True        3         0.50     False
    1          2      True        3         0.50     False
    2          4     False        3         0.75     False
    """
    gate = (gate or GateConfig()).model_copy(update={"design": "fixed", "min_tasks": 2})
    log = run.iterations.reset_index(drop=True)
    rows, pairs = [], []
    for n, r in log.iterrows():
        ids = schema.split_ids(r["subsample_ids"])
        for side, scores in (("parent", r["scores_before"]), ("child", r["scores_after"])):
            values = [float(v) for v in schema.split_ids(scores)]
            rows += [{"candidate": f"p{n}-{side}", "task_id": t, "split": "train",
                      "score": v, "passed": v >= 1.0} for t, v in zip(ids, values)]
        pairs.append({"child": f"p{n}-child", "parent": f"p{n}-parent"})
    columns = ["iteration", "kind", "parent", "child", "accepted", "n_tasks", "sum_before",
               "sum_after", "delta_pp", "p_one_sided", "level", "evidence"]
    if not rows:
        return pd.DataFrame(columns=columns)
    trials = pd.DataFrame(rows)
    trials["repeat"] = trials.groupby(["candidate", "task_id"]).cumcount()
    tested = gates.significance_gate(schema.as_trials(trials), pd.DataFrame(pairs),
                                     gate=gate)
    out = log[["iteration", "kind", "parent", "child", "accepted", "sum_before", "sum_after"]]
    out = out.assign(n_tasks=tested["n_tasks"].to_numpy(), delta_pp=tested["delta_pp"].to_numpy(),
                     p_one_sided=tested["p_one_sided"].to_numpy(), level=gate.alpha)
    out["evidence"] = out["p_one_sided"] <= out["level"]
    return out[columns]
