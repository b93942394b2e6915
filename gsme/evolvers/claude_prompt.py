"""What the Claude evolver is shown: prompt texts and text views of a run.

The prompt texts live in ``gsme/prompts/*.txt`` as :class:`string.Template` texts. This
module fills them from library objects: the why vocabulary and the parent harness (the
stable part of a request, cached), digests of failing *train* trajectories, the archive,
the lineage's patches and the mechanisms tried before (the variable part).

Test tasks and ground-truth pathology labels are never shown: :func:`train_failures`
drops both before anything is rendered.
"""

from __future__ import annotations

import warnings
from importlib import resources
from string import Template

import numpy as np
import pandas as pd

from gsme.patches import Patch
from gsme.schema import LEVERS, columns, task_features

__all__ = ["CHARS_PER_TOKEN", "FAILURE_COLUMNS", "HISTORY_COLUMNS", "archive_text", "diagnoses_text", "digest", "failure_digests", "features", "history_text", "lineage_text", "load_prompt", "sample_failures", "system_blocks", "train_failures", "vocabulary_text"]

CHARS_PER_TOKEN = 4
"""Token estimate used for digest budgets: about four characters of English per token."""

FAILURE_COLUMNS = tuple(columns("failures"))
_HEAD_SHARE = 0.4  # share of a digest's budget given to the transcript's head


def load_prompt(name: str, **values) -> str:
    """The prompt text ``gsme/prompts/<name>.txt`` with its ``$placeholders`` filled.

    Raises
    ------
    KeyError
        A placeholder of the text has no value in ``values``.

    Examples
    --------
    >>> text = load_prompt("diagnose", digests="<failure/>", n_shown=1, n_total=3)
    >>> "<failure/>" in text, "$digests" in text
    (True, False)
    >>> load_prompt("diagnose")
    Traceback (most recent call last):
    ...
    KeyError: 'n_shown'
    """
    text = (resources.files("gsme") / "prompts" / f"{name}.txt").read_text(encoding="utf-8")
    return Template(text).substitute(values)


def train_failures(failures: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``failures`` safe to show: train rows only, no ``pathology`` column.

    Rows whose ``split`` (when the column is present) is not ``"train"`` are dropped
    with a warning; the ``pathology`` column is dropped. Rows are sorted by
    ``task_id, repeat, candidate`` so that sampling does not depend on the input order.

    Raises
    ------
    TypeError
        ``failures`` is not a DataFrame.
    ValueError
        A column of ``candidate, task_id, repeat, transcript`` is missing.

    Examples
    --------
    >>> import warnings
    >>> failures = pd.DataFrame({"candidate": "baseline", "task_id": ["t2", "t1", "t3"],
    ...                          "repeat": 0, "transcript": ["...", "submit()", "..."],
    ...                          "split": ["train", "train", "test"],
    ...                          "category": ["math", "shell", "math"], "pathology": "looping"})
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     shown = train_failures(failures)
    >>> shown["task_id"].tolist(), "pathology" in shown.columns
    (['t1', 't2'], False)
    """
    if not isinstance(failures, pd.DataFrame):
        raise TypeError(f"failures must be a pandas DataFrame, got {type(failures).__name__}")
    missing = [c for c in FAILURE_COLUMNS if c not in failures.columns]
    if missing:
        raise ValueError(
            f"failures is missing column(s) {missing}; it needs {list(FAILURE_COLUMNS)} "
            f"plus the task feature columns, it has {list(failures.columns)}"
        )
    out = failures.drop(columns=["pathology"], errors="ignore")
    if "split" in out.columns:
        held_out = out["split"].astype(object) != "train"
        if held_out.any():
            warnings.warn(
                f"failures holds {int(held_out.sum())} row(s) whose split is not 'train' "
                f"(task_id {sorted(map(str, out.loc[held_out, 'task_id'].unique()))[:5]}...); "
                "they are dropped and never shown to the evolver",
                stacklevel=3,
            )
            out = out.loc[~held_out]
    return out.sort_values(["task_id", "repeat", "candidate"], kind="stable").reset_index(drop=True)


def sample_failures(failures: pd.DataFrame, *, max_failures: int, seed: int) -> pd.DataFrame:
    """At most ``max_failures`` rows of ``failures``, drawn without replacement from ``seed``.

    The sample keeps the input's row order, so equal inputs and seeds give equal prompts.

    Examples
    --------
    >>> failures = pd.DataFrame({"task_id": ["a", "b", "c", "d"], "repeat": 0})
    >>> sample_failures(failures, max_failures=2, seed=0)["task_id"].tolist()
    ['c', 'd']
    """
    if len(failures) <= max_failures:
        return failures
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(failures), size=max_failures, replace=False))
    return failures.iloc[rows].reset_index(drop=True)


def digest(transcript, *, max_chars: int) -> str:
    """``transcript`` whole if it fits ``max_chars``, else its head and tail with a marker.

    Examples
    --------
    >>> digest("abcdefghij" * 10, max_chars=20)
    'abcdefgh\\n[... 80 characters omitted ...]\\nijabcdefghij'
    """
    text = "" if transcript is None or (isinstance(transcript, float) and np.isnan(transcript)) \
        else str(transcript)
    if len(text) <= max_chars:
        return text
    head = int(max_chars * _HEAD_SHARE)
    tail = max_chars - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[-tail:]}"


def features(row: pd.Series) -> dict:
    """The task feature columns of one failures row (everything but trial bookkeeping).

    Examples
    --------
    >>> row = pd.Series({"candidate": "baseline", "task_id": "t1", "repeat": 0,
    ...                  "transcript": "submit()", "category": "shell"})
    >>> features(row)
    {'category': 'shell'}
    """
    return {name: _scalar(row[name]) for name in task_features(row.index)}


def failure_digests(failures: pd.DataFrame, *, digest_tokens: int) -> str:
    """One block per failure: its task_id, repeat and features, then its transcript digest.

    Examples
    --------
    >>> failures = pd.DataFrame({"candidate": "baseline", "task_id": ["t1"], "repeat": [0],
    ...                          "transcript": ["submit()"], "category": ["shell"]})
    >>> print(failure_digests(failures, digest_tokens=5))
    <failure task_id="t1" repeat="0">
    features: category='shell'
    <transcript>
    submit()
    </transcript>
    </failure>
    """
    blocks = []
    for _, row in failures.iterrows():
        feats = ", ".join(f"{k}={v!r}" for k, v in features(row).items()) or "(none)"
        body = digest(row["transcript"], max_chars=digest_tokens * CHARS_PER_TOKEN)
        blocks.append(
            f'<failure task_id="{row["task_id"]}" repeat="{int(row["repeat"])}">\n'
            f"features: {feats}\n<transcript>\n{body}\n</transcript>\n</failure>"
        )
    return "\n\n".join(blocks)


def system_blocks(vocabulary, files: dict[str, str] | None) -> list[dict]:
    """The stable system blocks: the method's rules with the vocabulary, then the harness.

    The last block carries ``cache_control`` so the tools and all of the system prompt
    are cached and shared by the diagnose and propose calls of a round.

    Examples
    --------
    >>> from gsme.vocabulary import Vocabulary
    >>> blocks = system_blocks(Vocabulary.default(), {"AGENTS.md": "Be careful."})
    >>> len(blocks), blocks[-1]["cache_control"]
    (2, {'type': 'ephemeral'})
    >>> print(blocks[-1]["text"])
    The current harness, file by file:
    <BLANKLINE>
    <file path="AGENTS.md">
    Be careful.
    </file>
    """
    rules = load_prompt("evolver_system", levers=", ".join(LEVERS),
                        vocabulary=vocabulary_text(vocabulary))
    blocks = [{"type": "text", "text": rules}]
    if files is not None:
        shown = "\n\n".join(f'<file path="{path}">\n{text}\n</file>'
                            for path, text in files.items())
        blocks.append({"type": "text", "text": f"The current harness, file by file:\n\n{shown}"})
    blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return blocks


def vocabulary_text(vocabulary) -> str:
    """One ``- label: definition`` line per why label.

    Examples
    --------
    >>> from gsme.vocabulary import Vocabulary
    >>> vocabulary_text(Vocabulary.default()).splitlines()[0].split(":")[0]
    '- thinking-runaway'
    """
    frame = vocabulary.to_frame()
    return "\n".join(f"- {r.label}: {r.definition}" for r in frame.itertuples()) or "(empty)"


def archive_text(archive: pd.DataFrame) -> str:
    """The occupied cells with their elite, train rate, delta_pp and z.

    Examples
    --------
    >>> print(archive_text(pd.DataFrame({"where": ["knowledge"], "why": ["looping"],
    ...                                  "candidate": ["c1"], "rate": [0.55], "delta_pp": [12.5],
    ...                                  "z": [2.1], "round": [1]})))
        where     why candidate  rate  delta_pp   z  round
    knowledge looping        c1  0.55      12.5 2.1      1
    >>> archive_text(None)
    '(empty: no cell holds a credited elite yet)'
    """
    if archive is None or len(archive) == 0:
        return "(empty: no cell holds a credited elite yet)"
    cols = ["where", "why", "candidate", "rate", "delta_pp", "z", "round"]
    missing = [c for c in cols if c not in archive.columns]
    if missing:
        raise ValueError(f"archive is missing column(s) {missing}; it needs {cols}")
    return _table(archive[cols].sort_values(["where", "why"]))


def lineage_text(patches: list[Patch]) -> str:
    """The patches applied to the parent harness: where, why, mechanism, beacon, env_gate.

    Examples
    --------
    >>> from gsme.patches import FileChange
    >>> p = Patch(id="verify", where="prompt", why="careless-submit", mechanism="submit-verify",
    ...           beacon="verify", env_gate="has_tests",
    ...           changes=(FileChange("prompt/verify.md", "Run the tests first.\\n"),))
    >>> print(lineage_text([p]))
     where             why     mechanism beacon  env_gate
    prompt careless-submit submit-verify verify has_tests
    >>> lineage_text([])
    '(none: this is the seed harness)'
    """
    if not patches:
        return "(none: this is the seed harness)"
    rows = [{"where": p.where, "why": p.why, "mechanism": p.mechanism, "beacon": p.beacon,
             "env_gate": p.env_gate} for p in patches]
    return _table(pd.DataFrame(rows))


HISTORY_COLUMNS = ["mechanism", "where", "why", "decision", "delta_pp"]


def history_text(history: pd.DataFrame | None) -> str:
    """Mechanisms tried before with the gates' decision (``HISTORY_COLUMNS``).

    Examples
    --------
    >>> print(history_text(pd.DataFrame({"mechanism": ["loop-breaker"], "where": ["config"],
    ...                                  "why": ["looping"], "decision": ["keep"],
    ...                                  "delta_pp": [8.0]})))
       mechanism  where     why decision  delta_pp
    loop-breaker config looping     keep         8
    >>> history_text(None)
    '(none recorded)'
    """
    if history is None or len(history) == 0:
        return "(none recorded)"
    if not isinstance(history, pd.DataFrame):
        raise TypeError(f"history must be a DataFrame or None, got {type(history).__name__}")
    missing = [c for c in HISTORY_COLUMNS if c not in history.columns]
    if missing:
        raise ValueError(
            f"history is missing column(s) {missing}; it needs {HISTORY_COLUMNS}, "
            f"it has {list(history.columns)}"
        )
    return _table(history[HISTORY_COLUMNS])


def diagnoses_text(diagnoses: pd.DataFrame, task_features: dict[str, dict]) -> str:
    """The diagnoses, one block per task, with the task's features where known.

    Examples
    --------
    >>> d = pd.DataFrame({"task_id": ["t1"], "repeat": [0], "where": ["knowledge"],
    ...                   "why": ["careless-submit"], "confidence": [0.8],
    ...                   "evidence": ["submit() without tests"]})
    >>> print(diagnoses_text(d, {"t1": {"category": "shell"}}))
    task_id t1 (features: category='shell')
      repeat=0 where=knowledge why=careless-submit confidence=0.80 evidence: 'submit() without tests'
    """
    if len(diagnoses) == 0:
        return "(none)"
    blocks = []
    for task_id, group in diagnoses.groupby("task_id", sort=True):
        feats = task_features.get(str(task_id))
        shown = ", ".join(f"{k}={v!r}" for k, v in feats.items()) if feats else "(unknown)"
        lines = [f"task_id {task_id} (features: {shown})"]
        for r in group.sort_values("repeat").itertuples():
            lines.append(f"  repeat={r.repeat} where={r.where} why={r.why} "
                         f"confidence={r.confidence:.2f} evidence: {r.evidence!r}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _table(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:.3g}")


def _scalar(value):
    return value.item() if isinstance(value, np.generic) else value
