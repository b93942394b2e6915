"""Column contracts for gsme's four frames: trials, candidates, decisions, archive.

Every public function that takes one of these frames validates it here first, so a bad
frame fails at the boundary with an error that names the column and shows the offending
rows, never with a ``KeyError`` from deep inside pandas.

Column names are fixed: later versions add columns, never rename them. Cells hold scalars
only; list-valued fields (``beacons`` of a trial, ``parents`` of a candidate) are
comma-separated strings, see :func:`split_ids`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaErrors

SPLITS = ("train", "test")
LEVERS = ("prompt", "knowledge", "runtime", "config")
KINDS = ("baseline", "mutation", "recombination")
DECISIONS = ("credit", "cull", "inconclusive", "invalid", "inactive")
GATES = ("validity", "activation", "significance")

TRIAL_KEY = ["candidate", "task_id", "split", "k", "attempt"]
SLOT_KEY = ["candidate", "task_id", "split", "k"]


def _str(nullable: bool = False, isin=None, **kw) -> pa.Column:
    checks = [pa.Check.isin(list(isin))] if isin is not None else []
    return pa.Column(object, checks=checks, nullable=nullable, coerce=False, **kw)


def _int(ge: int | None = 0, **kw) -> pa.Column:
    checks = [pa.Check.ge(ge)] if ge is not None else []
    return pa.Column(np.int64, checks=checks, nullable=False, **kw)


def _float(**kw) -> pa.Column:
    return pa.Column(np.float64, nullable=True, **kw)


TRIALS = pa.DataFrameSchema(
    {
        "candidate": _str(),
        "task_id": _str(),
        "split": _str(isin=SPLITS),
        "k": _int(),
        "attempt": _int(),
        "passed": pa.Column(bool, nullable=False),
        "infra_ok": pa.Column(bool, nullable=False),
        "activated": pa.Column(bool, nullable=False),
        "beacons": _str(),
        "tokens": _float(),
        "cost_usd": _float(),
        "seconds": _float(),
        "pathology": _str(nullable=True),
        "trajectory": _str(nullable=True),
    },
    unique=TRIAL_KEY,
    name="trials",
)

CANDIDATES = pa.DataFrameSchema(
    {
        "candidate": _str(unique=True),
        "parents": _str(),
        "kind": _str(isin=KINDS),
        "where": _str(nullable=True, isin=LEVERS),
        "why": _str(nullable=True),
        "patch_id": _str(nullable=True),
        "beacon": _str(nullable=True),
        "env_gate": _str(nullable=True),
        "commit": _str(nullable=True),
        "branch": _str(nullable=True),
        "round": _int(),
        "rationale": _str(nullable=True),
    },
    name="candidates",
)

DECISIONS_SCHEMA = pa.DataFrameSchema(
    {
        "candidate": _str(),
        "parent": _str(),
        "split": _str(isin=SPLITS),
        "n_tasks": _int(),
        "n_dropped": _int(),
        "n_changed": _int(),
        "k": _int(),
        "rate_parent": _float(),
        "rate_child": _float(),
        "delta_pp": _float(),
        "se_pp": _float(),
        "z": _float(),
        "p_value": _float(),
        "activation_rate": _float(),
        "gate_failed": _str(nullable=True, isin=GATES),
        "decision": _str(isin=DECISIONS),
        "reason": _str(nullable=True),
    },
    name="decisions",
)

ARCHIVE = pa.DataFrameSchema(
    {
        "where": _str(isin=LEVERS),
        "why": _str(),
        "candidate": _str(),
        "rate": _float(),
        "delta_pp": _float(),
        "z": _float(),
        "round": _int(),
    },
    unique=["where", "why"],
    name="archive",
)

SCHEMAS = {
    "trials": TRIALS,
    "candidates": CANDIDATES,
    "decisions": DECISIONS_SCHEMA,
    "archive": ARCHIVE,
}

# Optional trial columns and the value a missing one takes in :func:`as_trials`.
TRIAL_DEFAULTS = {
    "attempt": 0,
    "infra_ok": True,
    "activated": False,
    "beacons": "",
    "tokens": np.nan,
    "cost_usd": np.nan,
    "seconds": np.nan,
    "pathology": None,
    "trajectory": None,
}


class FrameError(ValueError):
    """A frame broke its column contract; the message names the columns and rows at fault."""


def columns(kind: str) -> list[str]:
    """Column names of the frame ``kind`` (trials, candidates, decisions or archive)."""
    return list(_schema(kind).columns)


def empty(kind: str) -> pd.DataFrame:
    """A valid frame of ``kind`` with no rows and the contracted dtypes."""
    schema = _schema(kind)
    return pd.DataFrame(
        {name: pd.Series(dtype=_dtype(col)) for name, col in schema.columns.items()}
    )


def validate(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Check ``frame`` against the contract of ``kind`` and return it unchanged.

    Raises
    ------
    FrameError
        Names every failing column and check, and shows up to ten offending rows.
    TypeError
        When ``frame`` is not a DataFrame.
    """
    schema = _schema(kind)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{kind} must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in schema.columns if c not in frame.columns]
    if missing:
        raise FrameError(
            f"{kind} frame is missing column(s) {missing}; "
            f"it has {list(frame.columns)}, the contract is {list(schema.columns)}"
        )
    try:
        positional = frame if _has_positional_index(frame) else frame.reset_index(drop=True)
        schema.validate(_as_object_strings(positional, schema), lazy=True, inplace=True)
    except SchemaErrors as err:
        raise FrameError(_describe(kind, frame, err.failure_cases)) from None
    return frame


def as_trials(frame: pd.DataFrame) -> pd.DataFrame:
    """Return a validated copy of a trials frame, filling optional columns and fixing dtypes.

    Required columns: ``candidate, task_id, split, k, passed``. Missing optional columns
    take defaults (``attempt`` 0, ``infra_ok`` True, ``activated`` False, ``beacons`` "",
    numbers NaN, ``pathology``/``trajectory`` None). ``passed``, ``infra_ok`` and
    ``activated`` may be given as bools, 0/1 or "true"/"false"; anything else (NaN
    included) is rejected, never guessed.

    Examples
    --------
    >>> t = as_trials(pd.DataFrame({"candidate": ["a"], "task_id": ["t1"],
    ...                             "split": ["train"], "k": [0], "passed": [1]}))
    >>> bool(t.loc[0, "passed"]), t.loc[0, "attempt"]
    (True, np.int64(0))
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"trials must be a pandas DataFrame, got {type(frame).__name__}")
    out = frame.copy()
    required = ["candidate", "task_id", "split", "k", "passed"]
    missing = [c for c in required if c not in out.columns]
    if missing:
        raise FrameError(
            f"trials frame is missing required column(s) {missing}; it has {list(out.columns)}"
        )
    for name, default in TRIAL_DEFAULTS.items():
        if name not in out.columns:
            out[name] = default
    for name in ("passed", "infra_ok", "activated"):
        out[name] = _as_bool(out, name)
    for name in ("k", "attempt"):
        out[name] = _as_int(out, name)
    for name in ("tokens", "cost_usd", "seconds"):
        out[name] = pd.to_numeric(out[name], errors="coerce").astype(np.float64)
    for name in ("candidate", "task_id", "split", "beacons"):
        out[name] = out[name].astype(object).where(out[name].notna(), None)
    out["beacons"] = out["beacons"].fillna("")
    for name in ("pathology", "trajectory"):
        out[name] = out[name].astype(object).where(out[name].notna(), None)
    front = list(TRIALS.columns)
    out = out[front + [c for c in out.columns if c not in front]]
    return validate(out.reset_index(drop=True), "trials")


def split_ids(value: str | None) -> list[str]:
    """Split a comma-separated id cell (``beacons``, ``parents``) into a list."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    return [part for part in (p.strip() for p in str(value).split(",")) if part]


def join_ids(values) -> str:
    """Inverse of :func:`split_ids`."""
    return ",".join(str(v) for v in values)


def _schema(kind: str) -> pa.DataFrameSchema:
    try:
        return SCHEMAS[kind]
    except KeyError:
        raise ValueError(f"unknown frame kind {kind!r}; expected one of {list(SCHEMAS)}") from None


def _dtype(col: pa.Column):
    dtype = str(col.dtype)
    return {"object": object, "int64": np.int64, "float64": np.float64, "bool": bool}[dtype]


def _has_positional_index(frame: pd.DataFrame) -> bool:
    index = frame.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1


def _as_object_strings(frame: pd.DataFrame, schema: pa.DataFrameSchema) -> pd.DataFrame:
    """Accept pandas' string dtypes where the contract says ``object`` (text columns)."""
    text = [
        name
        for name, col in schema.columns.items()
        if str(col.dtype) == "object"
        and frame[name].dtype != object  # already object: nothing to convert
        and pd.api.types.is_string_dtype(frame[name].dtype)
    ]
    if not text:
        return frame
    out = frame.copy()
    for name in text:
        out[name] = out[name].astype(object).where(out[name].notna(), None)
    return out


def _as_bool(frame: pd.DataFrame, name: str) -> pd.Series:
    col = frame[name]
    if col.dtype == bool:
        return col
    mapping = {1: True, 0: False, "true": True, "false": False,  # 1/0 also cover True/False
               "True": True, "False": False, "1": True, "0": False}
    mapped = col.map(lambda v: mapping.get(v, None) if not _isna(v) else None)
    bad = mapped.isna()
    if bad.any():
        raise FrameError(
            f"trials column {name!r} must be bool (or 0/1, 'true'/'false'); "
            f"{int(bad.sum())} row(s) hold something else:\n{frame.loc[bad].head(10)}"
        )
    return mapped.astype(bool)


def _as_int(frame: pd.DataFrame, name: str) -> pd.Series:
    col = pd.to_numeric(frame[name], errors="coerce")
    bad = col.isna() | (col % 1 != 0)
    if bad.any():
        raise FrameError(
            f"trials column {name!r} must hold whole numbers; "
            f"{int(bad.sum())} row(s) do not:\n{frame.loc[bad].head(10)}"
        )
    return col.astype(np.int64)


def _isna(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _describe(kind: str, frame: pd.DataFrame, cases: pd.DataFrame) -> str:
    lines = [f"{kind} frame breaks its contract:"]
    is_unique_check = cases["check"].astype(str).str.contains("unique")
    for (column, check), group in cases[~is_unique_check].groupby(
        ["column", "check"], dropna=False, sort=False
    ):
        index = group["index"].dropna()
        lines.append(f"- column {column!r}: {check} failed in {len(index) or len(group)} row(s)")
        if len(index):
            positions = sorted(int(i) for i in index.unique())[:10]
            lines.append("  offending rows:\n" + _indent(frame.iloc[positions].to_string()))
        else:
            values = group["failure_case"].astype(str).unique()[:10]
            lines.append(f"  got: {', '.join(values)}")
    if is_unique_check.any():
        key = _unique_key(kind)
        dup = frame.reset_index(drop=True).duplicated(key, keep=False).to_numpy()
        lines.append(f"- columns {key} must be unique; {int(dup.sum())} rows share a key")
        lines.append("  offending rows:\n" + _indent(frame.iloc[dup.nonzero()[0][:10]].to_string()))
    return "\n".join(lines)


def _unique_key(kind: str) -> list[str]:
    schema = _schema(kind)
    return list(schema.unique or [n for n, c in schema.columns.items() if c.unique])


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
