"""The offline rule evolver: diagnoses failures by text signatures, proposes from templates.

It is the default evolver of the embedded (simulated) setup: no network, no API key. Its
diagnosis reads only transcript text, matching known pathology signatures, and is wrong on
purpose at a configurable rate (``misdiagnosis``), because real diagnosis is far from
perfect. Its proposals come from :mod:`gsme.evolvers.templates`, which mixes working,
useless, harmful and overfit mechanisms; like an LLM proposer it cannot tell them apart.
Only the gates can. Each patch is env-gated as narrowly as its diagnosis: on the feature
values where the failures diagnosed with its failure mode concentrate (:func:`derive_gate`),
so that it acts where those failures occur and a child borrows its parent's trials
everywhere else.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from gsme.comparisons import digest
from gsme.envgate import parse
from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver
from gsme.evolvers.templates import changes, templates_for
from gsme.patches import Patch, PatchError, lever_files, read_patches, validate_patch
from gsme.schema import task_features
from gsme.vocabulary import Vocabulary

__all__ = ["DENSITY_SHARE", "GATE_COVER", "KNOWN_WHYS", "LIFT_PER_TASK", "MIN_GATE_TASKS",
           "MIN_LIFT", "SIGNATURES", "UNMATCHED", "UNMATCHED_DEFINITION", "RuleEvolver",
           "derive_gate"]

# (why, lever its fix belongs to, signature): checked in order, the first match wins.
SIGNATURES = (
    ("thinking-runaway", "runtime",
     re.compile(r"reasoning budget exhausted|thinking exceeded the budget")),
    ("looping", "runtime", re.compile(r"(call: [^\n]+\n)\1{3,}")),
    ("context-overflow", "runtime", re.compile(r"context truncated|context window")),
    ("tool-misuse", "knowledge", re.compile(r"ToolError: ")),
    ("format-error", "runtime",
     re.compile(r"could not parse the answer|malformed answer|missing its closing tag")),
    ("careless-submit", "runtime",
     re.compile(r"without running the tests|no need to run the checks|tests were not executed")),
    ("premature-finalization", "prompt",
     re.compile(r"I'll stop here|Finalizing now|after partial work")),
)
KNOWN_WHYS = tuple(why for why, _, _ in SIGNATURES)
UNMATCHED = "wrong-answer"
UNMATCHED_DEFINITION = "The agent finished but its answer was wrong, with no other visible cause."
MIN_GATE_TASKS = 2
"""A feature value enters an env gate only when failures were diagnosed on at least this
many distinct tasks with it (one task is an anecdote, not a place)."""
GATE_COVER = 0.6
"""An env gate admits at least this share of the diagnosed failing trials it was derived from."""
DENSITY_SHARE = 0.5
"""A feature value enters an env gate when its density of diagnosed failures is at least
this share of the densest value's."""
MIN_LIFT = 1.5
LIFT_PER_TASK = 2.0
"""An env gate derived from the failures of n distinct tasks must admit at least
``MIN_LIFT + LIFT_PER_TASK / n`` times more of its failure mode's diagnosed trials (as a
share) than of all diagnosed failing tasks; below it the failures do not concentrate (a
few tasks need a stronger concentration: small samples look concentrated by chance)."""


class RuleEvolver(Evolver):
    """Offline evolver: signature-matching diagnosis and a template library of fixes.

    Parameters
    ----------
    seed : int
        Makes diagnoses and proposals reproducible. A diagnosis depends only on ``seed``
        and the failure (candidate, task_id, repeat); proposals draw from a generator that
        :meth:`reseed` restarts (a run reseeds it every round from its ``run_seed``).
    misdiagnosis : float
        The misdiagnosis rate, in [0, 1]: the probability that a diagnosis read from a
        signature has its where × why replaced by a wrong one (the why drawn uniformly
        from the other known failure modes, the where its lever). The draw is seeded per
        failure (``seed``, candidate, task_id, repeat), so the failures misdiagnosed at a
        rate are among those misdiagnosed at any higher rate. At 0 every diagnosis names
        the signature its transcript shows; at 1 none does. A transcript with no
        signature is diagnosed ``"wrong-answer"`` at any rate. The default 0.25 is not
        calibrated on anything: the closest published figure we know measures a related
        but different task (which agent and step caused a failure, not which failure mode:
        the best method of Zhang et al., ICML 2025, "Which Agent Causes Task Failures and
        When?", arXiv:2505.00212, finds the responsible agent in 53.5% of failures and the
        step in 14.2%), so treat it as a free knob and report results at several values
        (``benchmarks/diagnosis.py`` does). The simulated transcripts are themselves
        ambiguous (:data:`gsme.sim.transcripts.AMBIGUOUS`), so the share of diagnoses
        that are wrong against the simulator's ground truth is higher than this rate.

    Examples
    --------
    >>> ev = RuleEvolver(seed=0, misdiagnosis=0.0)
    >>> failures = pd.DataFrame({"candidate": ["c"], "task_id": ["t"], "repeat": [0],
    ...     "transcript": ["submit()  # submitted without running the tests"]})
    >>> ev.diagnose(failures)[["where", "why"]].iloc[0].tolist()
    ['runtime', 'careless-submit']
    >>> from gsme.patches import harness_files
    >>> from gsme.resources import SEED_HARNESS
    >>> (patch,) = ev.propose(ev.diagnose(failures), harness=harness_files(SEED_HARNESS), n=1)
    >>> patch.where, patch.why
    ('runtime', 'careless-submit')
    """

    name = "rule"

    def __init__(self, *, seed: int = 0, misdiagnosis: float = 0.25):
        if (isinstance(misdiagnosis, bool) or not isinstance(misdiagnosis, (int, float))
                or not 0.0 <= misdiagnosis <= 1.0):
            raise ValueError(f"misdiagnosis must be a number in [0, 1], got {misdiagnosis!r}")
        self.seed = int(seed)
        self.misdiagnosis = float(misdiagnosis)
        self._rng = np.random.default_rng(self.seed)

    def signature(self) -> dict[str, str]:
        """No model; ``prompt`` a digest of its settings (the misdiagnosis rate)."""
        return {"evolver_model": "", "prompt": digest({"rule": self.misdiagnosis})}

    def reseed(self, seed: int) -> None:
        """Restart the proposal generator from ``seed``."""
        self._rng = np.random.default_rng(seed)

    def diagnose(self, failures: pd.DataFrame, *, harness: Mapping[str, str] | None = None,
                 vocabulary=None, log=None) -> pd.DataFrame:
        """Diagnose each failure from its ``transcript`` text alone.

        ``harness``, ``vocabulary`` and ``log`` are not needed and are ignored.

        Parameters
        ----------
        failures : DataFrame
            ``candidate, task_id, repeat, transcript`` plus, optionally, task features.

        Returns
        -------
        DataFrame
            ``candidate, task_id, repeat, where, why, evidence, confidence`` (``evidence`` a
            quoted snippet of the transcript, ``confidence`` in (0, 1]), followed by the
            task feature columns of ``failures``, which :meth:`propose` uses to derive env
            gates. A transcript matching no signature gets ``why`` ``"wrong-answer"``.
        """
        required = ["candidate", "task_id", "repeat", "transcript"]
        missing = [c for c in required if c not in getattr(failures, "columns", [])]
        if missing:
            raise ValueError(f"failures lacks column(s) {missing}; required: {required}")
        features = task_features(failures.columns)
        rows = [self._diagnose_one(r) for r in failures[required].itertuples(index=False)]
        out = pd.DataFrame(rows, columns=DIAGNOSIS_COLUMNS)
        for column in features:
            out[column] = failures[column].to_numpy()
        return out

    def propose(self, diagnoses: pd.DataFrame, *, harness: Mapping[str, str],
                archive: pd.DataFrame | None = None, vocabulary=None, n: int,
                history: pd.DataFrame | None = None, log=None) -> list[Patch]:
        """Up to ``n`` patches for the dominant diagnosed failure modes of ``harness``.

        Failure modes are served in order of how many diagnoses name them, round-robin;
        each gets a template on the lever its diagnoses most often name (the diagnosed
        ``where``; any lever once those are used up), drawn at random among those whose
        mechanism is not yet in the
        harness's lineage (its ``patches/`` manifests), nor in this batch, nor tried before
        in the run without being credited (``history``: a tried mechanism whose
        ``decision`` was not ``credit``), as an engineer reading the run's record would. A
        label unknown to ``vocabulary`` is added to it first. The env gate is as narrow as
        the diagnosis: the feature values of the tasks whose failures were diagnosed with
        the patch's failure mode, when they concentrate there (see :func:`derive_gate`;
        the paper's env-gated patches). Every patch is checked
        with :func:`gsme.patches.validate_patch` against ``harness``. ``archive`` and
        ``log`` are not used: the rule evolver aims at the parent's own failures.
        Without ``vocabulary``, :meth:`Vocabulary.default` is used.
        """
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n must be a whole number >= 0, got {n!r}")
        needed = ["task_id", "where", "why"]
        missing = [c for c in needed if c not in getattr(diagnoses, "columns", [])]
        if missing:
            raise ValueError(f"diagnoses lacks column(s) {missing}; required: {needed} (pass "
                             "the frame diagnose() returns)")
        vocabulary = Vocabulary.default() if vocabulary is None else vocabulary
        used = {p.mechanism for p in read_patches(harness)}
        if history is not None and len(history):
            used |= set(history.loc[history["decision"] != "credit", "mechanism"])
        files = lever_files(harness)
        counts = diagnoses["why"].value_counts()
        order = sorted(counts.index, key=lambda w: (-counts[w], w))
        lever = diagnoses.groupby("why")["where"].agg(lambda s: s.value_counts().index[0])
        patches: list[Patch] = []
        while len(patches) < n:
            before = len(patches)
            for why in order:
                if len(patches) == n:
                    break
                options = [t for t in templates_for(why) if t.mechanism not in used]
                if not options:
                    continue
                options = [t for t in options if t.where == lever.get(why)] or options
                template = options[int(self._rng.integers(len(options)))]
                used.add(template.mechanism)
                label = _known_label(why, vocabulary, self.name)
                patch = self._build(template, label, diagnoses[diagnoses["why"] == why],
                                    diagnoses, files)
                try:
                    validate_patch(harness, patch)
                except PatchError:
                    continue
                patches.append(patch)
            if len(patches) == before and all(
                    t.mechanism in used for w in order for t in templates_for(w)):
                break
        return patches

    def _diagnose_one(self, row) -> tuple:
        """One diagnosis, in the order of ``DIAGNOSIS_COLUMNS``."""
        text = str(row.transcript)
        found = [(why, where, m) for why, where, pattern in SIGNATURES
                 if (m := pattern.search(text)) is not None]
        if not found:
            tail = text.strip().splitlines()[-1] if text.strip() else ""
            return (row.candidate, row.task_id, int(row.repeat), "prompt", UNMATCHED,
                    tail[:160], 0.3)
        why, where, match = found[0]
        rng = np.random.default_rng([self.seed, _stable(f"{row.candidate}|{row.task_id}"),
                                     int(row.repeat)])
        if rng.random() < self.misdiagnosis:
            others = [w for w in KNOWN_WHYS if w != why]
            why = others[int(rng.integers(len(others)))]
            where = next(lever for w, lever, _ in SIGNATURES if w == why)
        return (row.candidate, row.task_id, int(row.repeat), where, why, _evidence(text, match),
                0.8 if len(found) == 1 else 0.5)

    def _build(self, template, why: str, rows: pd.DataFrame, seen: pd.DataFrame,
               files) -> Patch:
        token = f"{int(self._rng.integers(16**6)):06x}"
        ident = f"{template.mechanism}-{token}"
        tasks = tuple(sorted(rows["task_id"].astype(str).unique()))
        named = tasks if template.mechanism == "train-task-hints" else ()
        return Patch(
            id=ident, where=template.where, why=why, mechanism=template.mechanism,
            beacon=ident, env_gate=derive_gate(rows, seen),
            rationale=(f"{len(rows)} failing trial(s) on {len(tasks)} task(s) diagnosed "
                       f"{why}; proposed {template.mechanism} on the {template.where} lever."),
            changes=changes(template, files, beacon=ident, why=why, tasks=named),
            predicted_tasks=tasks)


def derive_gate(rows: pd.DataFrame, seen: pd.DataFrame) -> str:
    """An env gate as narrow as the diagnosis: the feature values of the failures diagnosed.

    ``rows`` are the diagnosed failing trials of one failure mode. For each task feature,
    the candidate gate admits the fewest values of that feature, most diagnosed trials
    first, each seen on at least :data:`MIN_GATE_TASKS` distinct tasks, that hold at least
    :data:`GATE_COVER` of ``rows`` (``category == "py"``, ``area in ["a1", "a7"]``; for a
    boolean feature ``has_tests`` or ``not has_tests``). A candidate counts only when the
    failures concentrate there: its *lift*, the share of ``rows`` it admits over the share
    of the distinct failing tasks of ``seen`` (every failure diagnosed, whatever its mode)
    it admits, is at least ``MIN_LIFT + LIFT_PER_TASK / n`` for failures on n distinct
    tasks (:data:`MIN_LIFT`, :data:`LIFT_PER_TASK`). The narrowest counting candidate wins: the
    fewest of its feature's values seen in ``seen`` (as a share), then the higher lift,
    then the shorter gate. No gate (``""``, every task) when none counts. Missing feature
    values are never admitted.

    Parameters
    ----------
    rows : DataFrame
        ``task_id`` and task feature columns, one row per diagnosed failing trial.
    seen : DataFrame
        ``task_id`` and the same feature columns: every failure diagnosed (``rows``
        among them).

    Returns
    -------
    str
        An env gate for :func:`gsme.envgate.parse`, or ``""`` (every task).

    Examples
    --------
    >>> seen = pd.DataFrame({"task_id": list("abcdefgh"), "category": list("ppppsstt")})
    >>> derive_gate(seen.head(4), seen)
    'category == "p"'
    """
    population = seen.drop_duplicates("task_id")
    n_tasks = max(rows["task_id"].nunique(), 1)
    best, best_key = "", None
    for column in task_features(rows.columns):
        gate, n_values = _covering_gate(rows, population, column)
        if not gate:
            continue
        admitted = parse(gate)
        lift = admitted.mask(rows).mean() / max(admitted.mask(population).mean(), 1e-12)
        key = (n_values / max(population[column].nunique(), 1), -lift, len(gate))
        if lift >= MIN_LIFT + LIFT_PER_TASK / n_tasks and (best_key is None or key < best_key):
            best, best_key = gate, key
    return best


def _covering_gate(rows: pd.DataFrame, population: pd.DataFrame, column: str) -> tuple[str, int]:
    """The values of ``column`` where the failures of ``rows`` concentrate, as a gate and its
    number of values; ``("", 0)`` when they admit less than :data:`GATE_COVER` of ``rows``,
    or when the values are of mixed kinds.

    A value is admitted when it holds at least :data:`MIN_GATE_TASKS` distinct tasks of
    ``rows`` and its density (trials of ``rows`` per distinct failing task of
    ``population`` with that value) is at least :data:`DENSITY_SHARE` of the densest one.
    """
    present = rows[["task_id", column]].dropna().reset_index(drop=True)
    values = present[column].map(lambda v: v.item() if isinstance(v, np.generic) else v)
    kinds = set(map(type, values))
    if not (kinds <= {bool} or kinds <= {str} or kinds <= {int, float}):
        return "", 0
    tasks = present.groupby(values)["task_id"].nunique().to_dict()
    trials = {v: n for v, n in values.value_counts().items() if tasks[v] >= MIN_GATE_TASKS}
    if not trials:
        return "", 0
    failing = population[column].dropna().map(
        lambda v: v.item() if isinstance(v, np.generic) else v).value_counts().to_dict()
    density = {v: n / max(failing.get(v, 0), 1) for v, n in trials.items()}
    top = max(density.values())
    chosen = sorted((v for v in trials if density[v] >= DENSITY_SHARE * top), key=str)
    if sum(trials[v] for v in chosen) < GATE_COVER * len(rows):
        return "", 0
    if kinds <= {bool}:
        return ("", 0) if len(chosen) > 1 else (column if chosen[0] else f"not {column}", 1)
    literals = sorted(json.dumps(v) for v in chosen)
    gate = (f"{column} == {literals[0]}" if len(literals) == 1 else
            f"{column} in [{', '.join(literals)}]")
    return gate, len(literals)


def _known_label(why: str, vocabulary, added_by: str) -> str:
    """``why`` as the vocabulary spells it, adding it first when it is new."""
    if why in vocabulary.labels:
        return why
    definition = UNMATCHED_DEFINITION if why == UNMATCHED else f"Failures diagnosed as {why}."
    return vocabulary.add(why, definition, added_by)


def _evidence(text: str, match: re.Match) -> str:
    """The quoted snippet: the line(s) of ``text`` holding ``match``, at most 160 characters."""
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end() - 1 if match.group(0).endswith("\n") else match.end())
    return text[start:end if end >= 0 else len(text)].strip()[:160]


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
