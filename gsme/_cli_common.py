"""What the ``gsme`` commands share: exit codes, the executor options, printing numbers
and tables (:mod:`gsme.cli`)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by the commands that use it: `gsme --help` needs no pandas
    import pandas as pd


EXIT_USAGE = 2
EXIT_TAMPERED = 3
EXIT_INTERRUPTED = 130


def bars(args) -> bool:
    """Whether progress bars may show (on a terminal): neither ``--quiet`` nor ``--silent``."""
    return not (args.quiet or args.silent)


def executor_spec(stored: dict | None, args) -> dict | None:
    """The executor spec ``--executor`` and ``--executor-opt`` make of ``stored`` (a new
    kind drops the stored settings; options alone change the stored or default kind)."""
    spec = dict(stored) if stored else None
    if args.executor is not None and (spec is None or spec.get("kind") != args.executor):
        spec = {"kind": args.executor}
    options = key_values(args.executor_opt, "--executor-opt")
    if options:
        spec = {"kind": "threads", **(spec or {}), **options}
    return spec


def key_values(items: list[str], flag: str) -> dict:
    """``KEY=VALUE`` arguments as a dict, each value read as JSON, else kept as text."""
    from gsme.settings import ConfigError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def executor(spec: dict | None):
    """The executor of ``spec`` (None: scoring's default)."""
    from gsme import plugins

    return None if spec is None else plugins.build_executor(spec)


def print_report(table, *, as_json: bool) -> bool:
    """A sealed run's ship line and table (one JSON object with ``as_json``); True when
    JSON was printed."""
    from gsme import report

    line = report.ship_line(report.recommendation(table))
    if as_json:
        print(table.assign(ship=line).iloc[0].to_json(default_handler=str))
        return True
    print(line)
    print_table(table)
    return False


def print_table(table: pd.DataFrame) -> None:
    """The run table, one field a line, under what its rates and Δ are measured on."""
    if bool(table["simulated"].iloc[0]):
        print("SIMULATED results (embedded simulator; true effects from its ground truth)")
    k = next(name for name in table.columns if name.startswith("pass_at_")).split("_")[2]
    print(f"(rates, Δ and pass@{k}: the selected harness and the baseline over the first {k} "
          "repeats of every task; Δ = selected - baseline; p one-sided)")
    row = table.iloc[0]
    width = max(map(len, row.index))
    for name, value in row.items():
        print(f"{name:<{width}}  {number(value, p=is_p(name))}")


def is_p(name: str) -> bool:
    """True for a column holding a p-value (``p_one_sided``, ``train_p_one_sided``, ...)."""
    return "_p_" in name or name.startswith("p_")


def print_frame(frame: pd.DataFrame, *, header: bool = True) -> None:
    """A table whose rows are fields (their names in the index), numbers as
    :func:`number` writes them."""
    shown = frame.copy().astype(object)
    for name in frame.index:
        p = is_p(str(name))
        shown.loc[name] = [number(v, p=p) for v in frame.loc[name]]
    print(shown.to_string(header=header))


def known(value: float) -> float | None:
    """A figure for JSON: None where it is unknown (NaN)."""
    return None if math.isnan(value) else float(value)


def signed(value: float) -> str:
    return number(value, signed=True)


def number(value, *, p: bool = False, signed: bool = False) -> str:
    """A value as :func:`gsme.report.number` writes it (the one formatter of every
    surface), a text made printable (:func:`printable`)."""
    from gsme.report import number

    return printable(value) if isinstance(value, str) else number(value, p=p, signed=signed)


def one_line(err: BaseException) -> str:
    """The error's first line; when it ends in ":" (a list follows), with the list's first
    item, so the line still says what is wrong. Printable (:func:`printable`): an error
    may quote a trial's stderr or an evolver's text, whose carriage returns and other line
    breaks but ``\\n`` are escaped, not taken as the end of the line."""
    lines = [line.strip() for line in str(err).strip().split("\n") if line.strip()]
    if not lines:
        return type(err).__name__
    if lines[0].endswith(":") and len(lines) > 1 and lines[1].startswith("- "):
        return printable(f"{lines[0]} {lines[1][2:]}")
    return printable(lines[0])


ESCAPED = {code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7f, 0xa0))} | {
    code: f"\\u{code:04x}" for code in (0x200e, 0x200f, 0x2028, 0x2029, *range(0x202a, 0x202f),
                                         *range(0x2066, 0x206a))}


def printable(text: str) -> str:
    """``text`` with every control character written as an escape (``\\x1b``, ``\\u202e``):
    terminal escape sequences, carriage returns, newlines and bidirectional overrides from a
    trial or an evolver cannot drive the terminal or break a line in two. What is stored
    keeps the text as it was; only what is printed is escaped."""
    return text.translate(ESCAPED)

