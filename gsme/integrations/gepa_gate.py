"""gsme's gate inside GEPA: a proposal is accepted only when the paired gate credits it.

* :class:`GateAcceptance` — a GEPA ``AcceptanceCriterion`` (``gepa.optimize(...,
  acceptance_criterion=...)``; ``dspy.GEPA(..., gepa_kwargs={"acceptance_criterion":
  ...})``). GEPA's own minibatch rule screens first; a proposal that passes it is run
  with its parent on a fixed gate slice of the train set (never the val set) under
  gsme's gate design (:class:`~gsme.settings.GateConfig`: the adaptive design by default,
  :func:`gsme.designs.wanted` and :func:`gsme.gates.credit`), every trial charged to
  GEPA's budget through ``state.increment_evals``. Only a ``credit`` is accepted; the
  decision's line is GEPA's ``reject_reason``. Decisions and trials are stored in
  ``path`` as they are made, so a resumed GEPA run replays them instead of re-running.
* :class:`RepeatAdapter` — wraps a GEPA adapter: each evaluation is the mean of
  ``repeats`` rollouts, and an exception (an infrastructure failure) is re-run, never
  scored 0.
* :class:`DecisionsCallback` — a GEPA callback writing the gate's decisions (gsme's
  decisions frame, with the GEPA index each accepted child got) and trials as CSV.

**Sizing the gate slice.** ``gsme plan --tasks N --effect PP`` (or
:func:`gsme.compare.plan`) prints each design's power for a slice of N tasks and an effect
of PP points, and ``n_tasks_needed``, the slice the fixed design needs for 80% power. A
gate slice is a fixed part of the train set: every comparison runs on all of it.

GEPA 0.1.4 does not consult the acceptance criterion for merges (its merge rule is its
own): run with ``use_merge=False`` for every accepted candidate to be credited.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from gsme import _renamed, designs, gates, io, schema
from gsme.integrations.gepa import items_of, run_trials, task_ids
from gsme.settings import ConfigError, GateConfig

__all__ = ["DecisionsCallback", "GateAcceptance", "RepeatAdapter", "candidate_key"]


def candidate_key(candidate) -> str:
    """The id of a candidate's texts in the gate's trials: ``h-`` and 12 hex of SHA-256.

    Examples
    --------
    >>> candidate_key({"a": "x"}) == candidate_key({"a": "x"}) != candidate_key({"a": "y"})
    True
    """
    text = json.dumps(sorted(dict(candidate).items()))
    return "h-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def _minibatch_gain(proposal, state) -> bool:
    """GEPA's default rule: the child's minibatch sum beats its parent's."""
    return sum(proposal.subsample_scores_after or []) > sum(proposal.subsample_scores_before
                                                             or [])


class GateAcceptance:
    """A GEPA acceptance criterion that accepts only what gsme's gate credits.

    Parameters
    ----------
    adapter
        The GEPA adapter the run uses (for ``dspy.GEPA``: a ``DspyAdapter`` built on the
        same program and metric).
    gate_set : sequence of items or DataLoader
        The gate slice: train items, run by parent and child at every comparison.
    valset : sequence of items or DataLoader
        GEPA's val set: a gate task found in it is refused.
    path : path
        Folder for ``decisions.json`` and ``trials.csv`` (e.g. inside GEPA's run_dir).
    gate : GateConfig, optional
        The gate's design and level.
    task_id : callable, optional
        Item → task id (default: its ``task_id`` key or attribute).
    prefilter : callable, optional
        ``(proposal, state) -> bool`` run first, at no cost (default: GEPA's minibatch
        rule, the child's sum beats its parent's).
    threshold : float
        A score at least this passes.

    Examples
    --------
    An offline GEPA run (SIMULATED: :mod:`gsme.integrations.gepa_demo`) gated on 12 train tasks:

    >>> import contextlib, io
    >>> import gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> train, val = demo.make_tasks(16), demo.make_tasks(6, prefix="v")
    >>> adapter = demo.DemoAdapter(seed=0)
    >>> gate = GateAcceptance(adapter, train[:12], valset=val, path="gate")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=train,
    ...                            valset=val, adapter=adapter,
    ...                            reflection_lm=demo.ScriptedReflection(seed=0, targeted=1.0),
    ...                            max_metric_calls=200, run_dir="run", seed=0, use_merge=False,
    ...                            acceptance_criterion=gate, callbacks=[DecisionsCallback(gate)])
    >>> gate.decisions()[["iteration", "decision", "n_tasks", "k", "trials_run"]]
       iteration      decision  n_tasks  k  trials_run
    0          2  inconclusive       12  9         156
    1          3  inconclusive       12  9          96
    >>> print(GateAcceptance.line(gate.records[0]))
    gsme gate: inconclusive (Δ +8.3 pp, z 1.39, p 0.0955, 12 tasks, K 9, 156 trials) no boundary crossed by look 3 of 3
    """

    def __init__(self, adapter, gate_set: Sequence, *, valset: Sequence, path,
                 gate: GateConfig | None = None, task_id: Callable | None = None,
                 prefilter: Callable | None = None, threshold: float = 1.0):
        gate_set = items_of(gate_set)
        ids = task_ids(gate_set, task_id)
        overlap = sorted(set(ids) & set(task_ids(valset, task_id)))
        if overlap:
            raise ConfigError(f"gate tasks {overlap[:10]} are in GEPA's val set; the gate "
                              "slice comes from the train set only")
        self.adapter, self.items = adapter, dict(zip(ids, gate_set))
        self.tasks = pd.DataFrame({"task_id": ids, "split": "train"})
        self.gate, self.threshold = gate or GateConfig(), float(threshold)
        self.prefilter = prefilter or _minibatch_gain
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        stored = self.path / "decisions.json"
        self.records: list[dict] = [  # a record written before 0.3.0 names the child candidate
            {_renamed.new_name(key): value for key, value in record.items()}
            for record in (json.loads(stored.read_text()) if stored.is_file() else [])]
        saved = self.path / "trials.csv"
        self.trials = io.read_trials(saved) if saved.is_file() else None
        self._lines: dict[int, str] = {}
        self._charged: set[tuple[str, str]] = set()

    def should_accept(self, proposal, state) -> bool:
        if not self.prefilter(proposal, state):
            self._lines[id(proposal)] = (
                f"gsme gate: not run; the minibatch pre-filter rejected it "
                f"({sum(proposal.subsample_scores_before or [])} -> "
                f"{sum(proposal.subsample_scores_after or [])})")
            return False
        parent_index = int(proposal.parent_program_ids[0])
        texts = {candidate_key(c): dict(c) for c in (state.program_candidates[parent_index],
                                                   proposal.candidate)}
        parent, child = next(iter(texts)), list(texts)[-1]
        if parent == child:
            self._lines[id(proposal)] = "gsme gate: not run; the child's texts are its parent's"
            return False
        record = next((r for r in self.records if (r["parent"], r["child"]) ==
                       (parent, child)), None)
        if record is None:
            record = self._gate(parent, child, texts, parent_index, state.i + 1)
        if (parent, child) not in self._charged:  # a resumed run's replay charges what it ran
            self._charged.add((parent, child))
            state.increment_evals(int(record["trials_run"]))
        self._lines[id(proposal)] = self.line(record)
        return record["decision"] == "credit"

    def reject_reason(self, proposal, state) -> str:
        return self._lines.get(id(proposal), "gsme gate: no decision recorded")

    @staticmethod
    def line(record: dict) -> str:
        """One decision as the line GEPA logs."""
        return (f"gsme gate: {record['decision']} (Δ {record['delta_pp']:+.1f} pp, z "
                f"{record['z']:.2f}, p {record['p_one_sided']:.3g}, {record['n_tasks']} tasks, "
                f"K {record['k']}, {record['trials_run']} trials) {record['reason'] or ''}"
                ).rstrip()

    def decisions(self) -> pd.DataFrame:
        """Every decision made so far: gsme's decisions frame (``child`` and ``parent``
        are :func:`candidate_key` ids) plus ``iteration, parent_index, trials_run``."""
        columns = schema.columns("decisions") + ["iteration", "parent_index", "trials_run"]
        return pd.DataFrame(self.records, columns=columns)

    def _gate(self, parent: str, child: str, texts: dict, parent_index: int,
              iteration: int) -> dict:
        pairs = pd.DataFrame({"child": [child], "parent": [parent]})
        before = 0 if self.trials is None else len(self.trials)
        self.trials = run_trials(
            self.adapter, texts, self.items,
            lambda t: designs.wanted(t, pairs, self.tasks, split="train", gate=self.gate),
            trials=self.trials, gate=self.gate, threshold=self.threshold)
        candidates = pd.DataFrame({
            "candidate": [parent, child], "parents": ["", parent],
            "kind": ["baseline", "mutation"], "where": [None, "prompt"],
            "why": [None, "gepa-reflection"], "patch_id": [None, child], "beacon": [None, child],
            "env_gate": None, "commit": None, "branch": None,
            "round": np.array([0, iteration], dtype=np.int64), "rationale": None})
        # GEPA's loop scores no fresh block of the parent: its stored gate trials are read
        stored = self.gate.model_copy(update={"parent_trials": "stored"})
        decided = gates.credit(self.trials, candidates, gate=stored).iloc[0].to_dict()
        record = {**{k: (None if isinstance(v, float) and math.isnan(v) else v)
                     for k, v in decided.items()},
                  "iteration": iteration, "parent_index": parent_index,
                  "trials_run": len(self.trials) - before}
        record = json.loads(json.dumps(record, default=_plain))
        self.records.append(record)
        io.write_trials(self.trials, self.path / "trials.csv")
        tmp = self.path / "decisions.json.tmp"
        tmp.write_text(json.dumps(self.records, indent=1))
        tmp.replace(self.path / "decisions.json")
        return record


def _plain(value):
    return value.item() if isinstance(value, np.generic) else str(value)


class RepeatAdapter:
    """A GEPA adapter whose every evaluation is the mean of ``repeats`` rollouts.

    An exception from the wrapped adapter is an infrastructure failure: the call is
    re-run, up to ``max_reruns`` more times (default ``GateConfig().max_reruns``), and
    raised after that, never scored. ``num_metric_calls`` reports every rollout run, so
    GEPA charges them to its budget (its minibatch evaluations read it; its val
    evaluations count items). Everything else is the wrapped adapter's.

    Examples
    --------
    >>> from gsme.integrations import gepa_demo as demo
    >>> batch = RepeatAdapter(demo.DemoAdapter(seed=0), repeats=3).evaluate(
    ...     demo.make_tasks(4), demo.SEED_CANDIDATE)
    >>> [round(s, 3) for s in batch.scores], batch.num_metric_calls
    ([0.667, 0.0, 0.0, 0.0], 12)
    >>> crashing = RepeatAdapter(demo.DemoAdapter(seed=0, infra_rate=1.0), max_reruns=1)
    >>> try:
    ...     crashing.evaluate(demo.make_tasks(2), demo.SEED_CANDIDATE)
    ... except RuntimeError as err:
    ...     print(err)
    evaluate failed 2 times (infrastructure, not scored): DemoInfraError: simulated environment crash (call 2)
    """

    def __init__(self, adapter, *, repeats: int = 1, max_reruns: int | None = None):
        if int(repeats) < 1:
            raise ConfigError(f"repeats must be at least 1, got {repeats!r}")
        self._inner, self.repeats = adapter, int(repeats)
        self.max_reruns = GateConfig().max_reruns if max_reruns is None else int(max_reruns)

    def __getattr__(self, name):
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def evaluate(self, batch, candidate, capture_traces=False):
        from gepa.core.adapter import EvaluationBatch

        runs, calls = [], 0
        for repeat in range(self.repeats):
            for attempt in range(self.max_reruns + 1):
                calls += len(batch)
                try:
                    runs.append(self._inner.evaluate(batch, candidate,
                                                     capture_traces=capture_traces and not repeat))
                    break
                except Exception as err:  # infrastructure: re-run, never scored
                    if attempt == self.max_reruns:
                        raise RuntimeError(f"evaluate failed {attempt + 1} times (infrastructure, "
                                           f"not scored): {type(err).__name__}: {err}") from err
        first = runs[0]
        scores = np.mean([r.scores for r in runs], axis=0).tolist()
        return EvaluationBatch(outputs=first.outputs, scores=scores,
                               trajectories=first.trajectories,
                               objective_scores=first.objective_scores, num_metric_calls=calls)


class DecisionsCallback:
    """A GEPA callback writing the gate's decisions and trials when GEPA ends.

    ``<gate.path>/decisions.csv`` holds :meth:`GateAcceptance.decisions` plus
    ``child_index``: the GEPA index a credited child got, read from GEPA's final state
    (the candidate with the child's texts whose first parent is the decision's
    ``parent_index``), so children credited before a resume keep theirs. The gate's
    trials are in ``trials.csv`` (:func:`gsme.io.write_trials`).

    Examples
    --------
    >>> import contextlib, io
    >>> import gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> train, val = demo.make_tasks(16), demo.make_tasks(6, prefix="v")
    >>> adapter = demo.DemoAdapter(seed=0)
    >>> gate = GateAcceptance(adapter, train[:12], valset=val, path="gate")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=train,
    ...                            valset=val, adapter=adapter,
    ...                            reflection_lm=demo.ScriptedReflection(seed=0, targeted=1.0),
    ...                            max_metric_calls=200, run_dir="run", seed=0, use_merge=False,
    ...                            acceptance_criterion=gate, callbacks=[DecisionsCallback(gate)])
    >>> pd.read_csv("gate/decisions.csv")[["decision", "child_index"]]
           decision  child_index
    0  inconclusive          NaN
    1  inconclusive          NaN
    """

    def __init__(self, gate: GateAcceptance):
        self.gate = gate

    def on_optimization_end(self, event) -> None:
        state = event["final_state"]
        index = {(candidate_key(texts), int(parents[0])): i for i, (texts, parents) in
                 enumerate(zip(state.program_candidates, state.parent_program_for_candidate))
                 if i > 0 and parents and parents[0] is not None}
        out = self.gate.decisions()
        out["child_index"] = pd.array(
            [index.get((c, int(p))) if d == "credit" else None
             for c, p, d in zip(out["child"], out["parent_index"], out["decision"])],
            dtype="Int64")
        out.to_csv(self.gate.path / "decisions.csv", index=False)
