"""The offline rule evolver: diagnoses failures by text signatures, proposes from templates.

It is the default evolver of the embedded (simulated) setup: no network, no API key. Its
diagnosis reads only transcript text, matching known pathology signatures, and is wrong on
purpose at a configurable rate, because real diagnosis is far from perfect. Its proposals
come from :mod:`gsme.evolvers.templates`, which mixes working, useless, harmful and overfit
mechanisms; like an LLM proposer it cannot tell them apart. Only the gates can.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from gsme.evolvers.base import DIAGNOSIS_COLUMNS, Evolver
from gsme.evolvers.templates import changes, templates_for
from gsme.patches import Patch, PatchError, lever_files, read_patches, validate_patch
from gsme.schema import task_features
from gsme.vocabulary import Vocabulary

__all__ = ["GATE_SHARE", "KNOWN_WHYS", "MIN_GATE_TASKS", "SIGNATURES", "UNMATCHED", "UNMATCHED_DEFINITION", "RuleEvolver", "derive_gate"]

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
MIN_GATE_TASKS = 4  # fewer distinct failing tasks than this: no env gate is derived
GATE_SHARE = 0.75  # a feature value must cover this share of the failing tasks to gate on it


class RuleEvolver(Evolver):
    """Offline evolver: signature-matching diagnosis and a template library of fixes.

    Parameters
    ----------
    seed : int
        Makes diagnoses and proposals reproducible. A diagnosis depends only on ``seed``
        and the failure (candidate, task_id, repeat); proposals draw from a generator that
        :meth:`reseed` restarts (a run reseeds it every round from its ``run_seed``).
    error_rate : float
        Probability that a matched diagnosis is replaced by a wrong label (uniform over the
        other known failure modes), in [0, 1].

    Examples
    --------
    >>> ev = RuleEvolver(seed=0, error_rate=0.0)
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

    def __init__(self, *, seed: int = 0, error_rate: float = 0.25):
        if not 0.0 <= error_rate <= 1.0:
            raise ValueError(f"error_rate must be in [0, 1], got {error_rate!r}")
        self.seed = int(seed)
        self.error_rate = float(error_rate)
        self._rng = np.random.default_rng(self.seed)

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
        label unknown to ``vocabulary`` is added to it first. The env gate is derived from
        the features of the failing tasks (see :func:`derive_gate`). Every patch is checked
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
                patch = self._build(template, label, diagnoses[diagnoses["why"] == why], files)
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
        if rng.random() < self.error_rate:
            others = [w for w in KNOWN_WHYS if w != why]
            why = others[int(rng.integers(len(others)))]
            where = next(lever for w, lever, _ in SIGNATURES if w == why)
        return (row.candidate, row.task_id, int(row.repeat), where, why, _evidence(text, match),
                0.8 if len(found) == 1 else 0.5)

    def _build(self, template, why: str, rows: pd.DataFrame, files) -> Patch:
        token = f"{int(self._rng.integers(16**6)):06x}"
        ident = f"{template.mechanism}-{token}"
        tasks = tuple(sorted(rows["task_id"].astype(str).unique()))
        named = tasks if template.mechanism == "train-task-hints" else ()
        return Patch(
            id=ident, where=template.where, why=why, mechanism=template.mechanism,
            beacon=ident, env_gate=derive_gate(rows),
            rationale=(f"{len(rows)} failing trial(s) on {len(tasks)} task(s) diagnosed "
                       f"{why}; proposed {template.mechanism} on the {template.where} lever."),
            changes=changes(template, files, beacon=ident, why=why, tasks=named),
            predicted_tasks=tasks)


def derive_gate(rows: pd.DataFrame) -> str:
    """An env gate from where failures concentrate; empty when they do not.

    Over the distinct failing tasks (at least :data:`MIN_GATE_TASKS`): a ``category``
    shared by a share :data:`GATE_SHARE` of them gives ``category == "<value>"``; otherwise
    the boolean feature true on the largest share (at least :data:`GATE_SHARE`) gives a
    bare-name gate. Other columns are ignored.

    Examples
    --------
    >>> rows = pd.DataFrame({"task_id": list("abcd"), "category": ["py"] * 4})
    >>> derive_gate(rows)
    'category == "py"'
    """
    tasks = rows.drop_duplicates("task_id")
    if len(tasks) < MIN_GATE_TASKS:
        return ""
    if "category" in tasks.columns:
        shares = tasks["category"].astype(str).value_counts(normalize=True)
        if shares.iloc[0] >= GATE_SHARE:
            return f'category == "{shares.index[0]}"'
    flags = [c for c in task_features(tasks.columns) if tasks[c].dtype == bool]
    if flags:
        shares = tasks[flags].mean().sort_values(ascending=False, kind="stable")
        if shares.iloc[0] >= GATE_SHARE:
            return str(shares.index[0])
    return ""


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
