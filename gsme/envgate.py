"""Env gates: a small declarative predicate over task features, parsed without ``eval``.

A patch declares on which tasks it can act, e.g. ``category == "python" and has_tests``.
gsme reads the gate before running anything, so it knows which tasks a child must be
scored on and on which it behaves exactly as its parent.

Grammar (lowest precedence first)::

    gate       := or_expr | ""                       (empty: every task)
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | atom
    atom       := "(" or_expr ")" | "true" | "false"
                | NAME                                 (truthy)
                | NAME ("==" | "!=" | "<" | "<=" | ">" | ">=") literal
                | NAME ["not"] "in" "[" [literal ("," literal)*] "]"
    literal    := 'single' or "double" quoted string | int | float | true | false

Semantics. A comparison needs the feature and the literal to be of one kind (bool,
number or string); a mismatch is an error, never a silent False. A missing value (None,
NaN, NA) equals nothing: ``==``, ``in``, the ordering operators and a bare name are False
on it, ``!=`` and ``not in`` are True (so ``a != v`` is always ``not a == v``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["EnvGate", "EnvGateError", "admitted", "parse"]

KEYWORDS = {"and", "or", "not", "in"}
BOOLS = {"true": True, "True": True, "false": False, "False": False}
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")

_TOKEN = re.compile(
    r"""(?P<space>\s+)
      | (?P<number>(?>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)(?![A-Za-z0-9_.]))
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
      | (?P<op>==|!=|<=|>=|<|>)
      | (?P<punct>[()\[\],])
    """,
    re.VERBOSE,
)


class EnvGateError(ValueError):
    """An env gate that does not parse, or that cannot decide on the features given."""


@dataclass(frozen=True)
class _Token:
    kind: str  # name, keyword, bool, number, string, op, punct, end
    text: str
    value: object
    column: int  # 1-based


# ---------------------------------------------------------------------------- tree nodes


@dataclass(frozen=True)
class _Const:
    value: bool


@dataclass(frozen=True)
class _Truthy:
    name: str


@dataclass(frozen=True)
class _Compare:
    name: str
    op: str
    value: object


@dataclass(frozen=True)
class _Member:
    name: str
    values: tuple
    negate: bool


@dataclass(frozen=True)
class _Not:
    item: object


@dataclass(frozen=True)
class _And:
    items: tuple


@dataclass(frozen=True)
class _Or:
    items: tuple


# ---------------------------------------------------------------------------- public API


@dataclass(frozen=True)
class EnvGate:
    """A parsed env gate. Build it with :func:`parse`.

    Two gates are equal when their parsed trees are equal, so ``parse(str(g)) == g``.

    Examples
    --------
    >>> gate = parse("category == 'python' and n_tests >= 2")
    >>> gate.admits({"category": "python", "n_tests": 3})
    True
    >>> str(gate), sorted(gate.names)
    ('category == "python" and n_tests >= 2', ['category', 'n_tests'])
    """

    tree: object
    text: str = field(default="", compare=False)

    def __str__(self) -> str:
        return _render(self.tree)

    def __repr__(self) -> str:
        return f"EnvGate({str(self)!r})"

    @property
    def names(self) -> set[str]:
        """The feature names the gate reads."""
        return _names(self.tree)

    def mask(self, tasks: pd.DataFrame) -> np.ndarray:
        """Boolean array, one entry per row of ``tasks``: does the gate admit that task?

        Every feature the gate reads must be a column of ``tasks``.

        Raises
        ------
        EnvGateError
            A feature is not a column (the message lists the columns), or a column's
            values cannot be compared with the gate's literal.
        """
        if not isinstance(tasks, pd.DataFrame):
            raise TypeError(f"tasks must be a pandas DataFrame, got {type(tasks).__name__}")
        missing = sorted(self.names - set(tasks.columns))
        if missing:
            raise EnvGateError(
                f"env gate {str(self)!r} reads feature(s) {missing} that tasks do not have; "
                f"available columns: {sorted(map(str, tasks.columns))}"
            )
        columns = {name: _column(name, tasks[name], self) for name in self.names}
        return _evaluate(self.tree, columns, len(tasks), self)

    def admits(self, features: Mapping) -> bool:
        """Does the gate admit one task with these ``features`` (feature name → value)?"""
        if not isinstance(features, Mapping):
            raise TypeError(f"features must be a mapping, got {type(features).__name__}")
        missing = sorted(self.names - set(features))
        if missing:
            raise EnvGateError(
                f"env gate {str(self)!r} reads feature(s) {missing} that the task does not "
                f"have; available features: {sorted(map(str, features))}"
            )
        columns = {
            name: _column(name, pd.Series([features[name]], dtype=object), self)
            for name in self.names
        }
        return bool(_evaluate(self.tree, columns, 1, self)[0])


def parse(expr: str) -> EnvGate:
    """Parse an env gate; the empty string (or ``true``) admits every task.

    Raises
    ------
    EnvGateError
        Shows the expression and points at the column of the offending token.

    Examples
    --------
    >>> str(parse('lang in ["py", "js"] and not (flaky or n > 3.5)'))
    'lang in ["py", "js"] and not (flaky or n > 3.5)'
    """
    if not isinstance(expr, str):
        raise TypeError(f"env gate must be a string, got {type(expr).__name__}")
    parser = _Parser(expr)
    return EnvGate(parser.parse(), expr)


def admitted(tasks: pd.DataFrame, expr: str | EnvGate) -> pd.DataFrame:
    """The rows of ``tasks`` that the env gate ``expr`` admits (same columns and index)."""
    gate = expr if isinstance(expr, EnvGate) else parse(expr)
    return tasks.loc[gate.mask(tasks)]


# ---------------------------------------------------------------------------- parser


def _tokenize(expr: str) -> list[_Token]:
    tokens, pos = [], 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if match is None:
            char = expr[pos]
            hint = {"=": " (use '==')", "&": " (use 'and')", "|": " (use 'or')",
                    "!": " (use 'not' or '!=')", '"': " (unterminated string)",
                    "'": " (unterminated string)"}.get(char, "")
            raise _error(expr, pos + 1, f"unexpected character {char!r}{hint}")
        kind, text = match.lastgroup, match.group()
        if kind == "name":
            if text in BOOLS:
                tokens.append(_Token("bool", text, BOOLS[text], pos + 1))
            elif text in KEYWORDS:
                tokens.append(_Token("keyword", text, text, pos + 1))
            else:
                tokens.append(_Token("name", text, text, pos + 1))
        elif kind == "number":
            value = int(text) if re.fullmatch(r"[-+]?\d+", text) else float(text)
            if isinstance(value, float) and not np.isfinite(value):
                raise _error(expr, pos + 1, f"number {text!r} is too large")
            tokens.append(_Token("number", text, value, pos + 1))
        elif kind == "string":
            tokens.append(_Token("string", text, _unescape(text[1:-1]), pos + 1))
        elif kind in ("op", "punct"):
            tokens.append(_Token(kind, text, text, pos + 1))
        pos = match.end()
    tokens.append(_Token("end", "", None, len(expr) + 1))
    return tokens


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


class _Parser:
    def __init__(self, expr: str):
        self.expr = expr
        self.tokens = _tokenize(expr)
        self.pos = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.pos]

    def take(self) -> _Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def fail(self, message: str, token: _Token | None = None):
        token = token or self.token
        found = "the end" if token.kind == "end" else repr(token.text)
        raise _error(self.expr, token.column, f"{message}, found {found}")

    def is_(self, kind: str, text: str | None = None) -> bool:
        return self.token.kind == kind and (text is None or self.token.text == text)

    def parse(self):
        if self.token.kind == "end":
            return _Const(True)
        tree = self.or_expr()
        if self.token.kind != "end":
            self.fail("expected 'and', 'or' or the end of the gate")
        return tree

    def or_expr(self):
        items = [self.and_expr()]
        while self.is_("keyword", "or"):
            self.take()
            items.append(self.and_expr())
        return _flatten(_Or, items)

    def and_expr(self):
        items = [self.not_expr()]
        while self.is_("keyword", "and"):
            self.take()
            items.append(self.not_expr())
        return _flatten(_And, items)

    def not_expr(self):
        if self.is_("keyword", "not"):
            self.take()
            return _Not(self.not_expr())
        return self.atom()

    def atom(self):
        if self.is_("punct", "("):
            self.take()
            tree = self.or_expr()
            if not self.is_("punct", ")"):
                self.fail("expected ')'")
            self.take()
            return tree
        if self.is_("bool"):
            return _Const(self.take().value)
        if not self.is_("name"):
            self.fail("expected a feature name, 'not', 'true', 'false' or '('")
        name = self.take().text
        if self.is_("op"):
            op = self.take().text
            literal = self.literal()
            if op not in ("==", "!=") and isinstance(literal, bool):
                self.fail(f"operator {op!r} needs a number or a string",
                          self.tokens[self.pos - 1])
            return _Compare(name, op, literal)
        if self.is_("keyword", "in"):
            self.take()
            return _Member(name, self.literal_list(), False)
        if self.is_("keyword", "not"):
            self.take()
            if not self.is_("keyword", "in"):
                self.fail(f"expected 'in' after '{name} not'")
            self.take()
            return _Member(name, self.literal_list(), True)
        return _Truthy(name)

    def literal(self):
        if self.token.kind in ("string", "number", "bool"):
            return self.take().value
        self.fail("expected a literal (quoted string, number, true or false)")

    def literal_list(self) -> tuple:
        start = self.token
        if not self.is_("punct", "["):
            self.fail("expected '[' to open a list of values")
        self.take()
        values = []
        while not self.is_("punct", "]"):
            if values:
                if not self.is_("punct", ","):
                    self.fail("expected ',' or ']' in a list of values")
                self.take()
            values.append(self.literal())
        self.take()
        if len({_kind(v) for v in values}) > 1:
            raise _error(self.expr, start.column,
                         "a list of values must hold one kind (all strings, numbers or bools)")
        return tuple(values)


def _flatten(cls, items: list):
    if len(items) == 1:
        return items[0]
    flat = []
    for item in items:
        flat.extend(item.items if isinstance(item, cls) else (item,))
    return cls(tuple(flat))


def _error(expr: str, column: int, message: str) -> EnvGateError:
    return EnvGateError(f"{message} at column {column} of env gate:\n  {expr}\n  "
                        + " " * (column - 1) + "^")


# ---------------------------------------------------------------------------- rendering


def _render(node, parent: type | None = None) -> str:
    if isinstance(node, _Const):
        return "true" if node.value else "false"
    if isinstance(node, _Truthy):
        return node.name
    if isinstance(node, _Compare):
        return f"{node.name} {node.op} {_literal(node.value)}"
    if isinstance(node, _Member):
        values = ", ".join(_literal(v) for v in node.values)
        return f"{node.name} {'not in' if node.negate else 'in'} [{values}]"
    if isinstance(node, _Not):
        return "not " + _render(node.item, _Not)
    joiner = " and " if isinstance(node, _And) else " or "
    text = joiner.join(_render(item, type(node)) for item in node.items)
    needs_parens = parent is _Not or (parent is _And and isinstance(node, _Or))
    return f"({text})" if needs_parens else text


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        body = value.replace("\\", "\\\\").replace('"', '\\"')
        return '"' + body.replace("\n", "\\n").replace("\t", "\\t") + '"'
    return repr(value)


def _names(node) -> set[str]:
    if isinstance(node, (_Truthy, _Compare, _Member)):
        return {node.name}
    if isinstance(node, _Not):
        return _names(node.item)
    if isinstance(node, (_And, _Or)):
        return set().union(*(_names(item) for item in node.items))
    return set()


# ---------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class _Col:
    kind: str  # bool, number, string or missing (every value missing)
    data: np.ndarray  # missing positions hold a neutral filler
    na: np.ndarray


def _kind(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _column(name: str, values: pd.Series, gate: EnvGate) -> _Col:
    na = values.isna().to_numpy(dtype=bool)
    present = values[~na]
    if pd.api.types.is_bool_dtype(values.dtype):
        kind = "bool"
    elif pd.api.types.is_numeric_dtype(values.dtype):
        kind = "number"
    else:
        kinds = {_kind(v) for v in present}
        if len(kinds) > 1 or kinds - {"bool", "number", "string"}:
            raise EnvGateError(
                f"env gate {str(gate)!r} cannot read feature {name!r}: it holds values of "
                f"kind(s) {sorted(kinds)}; a gate compares one kind of bools, numbers or strings"
            )
        kind = kinds.pop() if kinds else "missing"
    filler = {"bool": False, "number": 0.0, "string": "", "missing": None}[kind]
    data = values.astype(object).where(~na, filler).to_numpy(dtype=object)
    if kind == "number":
        data = data.astype(float)
    elif kind == "bool":
        data = data.astype(bool)
    return _Col(kind, data, na)


def _evaluate(node, columns: dict[str, _Col], n: int, gate: EnvGate) -> np.ndarray:
    if isinstance(node, _Const):
        return np.full(n, node.value, dtype=bool)
    if isinstance(node, _Not):
        return ~_evaluate(node.item, columns, n, gate)
    if isinstance(node, (_And, _Or)):
        parts = [_evaluate(item, columns, n, gate) for item in node.items]
        reduce = np.logical_and if isinstance(node, _And) else np.logical_or
        return reduce.reduce(parts, axis=0)
    col = columns[node.name]
    if isinstance(node, _Truthy):
        if col.kind == "missing":
            return np.zeros(n, dtype=bool)
        if col.kind == "bool":
            truthy = col.data
        else:
            truthy = col.data != (0.0 if col.kind == "number" else "")
        return np.asarray(truthy, dtype=bool) & ~col.na
    if isinstance(node, _Member):
        _check_kind(node, col, node.values, gate)
        hit = np.isin(col.data, list(node.values)) & ~col.na if node.values else np.zeros(
            n, dtype=bool)
        return ~hit if node.negate else hit
    _check_kind(node, col, (node.value,), gate)
    if col.kind == "missing":
        return np.full(n, node.op == "!=", dtype=bool)
    equal = np.asarray(col.data == node.value, dtype=bool) & ~col.na
    if node.op in ("==", "!="):
        return equal if node.op == "==" else ~equal
    compare = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
    return np.asarray(compare[node.op](col.data, node.value), dtype=bool) & ~col.na


def _check_kind(node, col: _Col, literals: tuple, gate: EnvGate) -> None:
    kinds = {_kind(v) for v in literals}
    if col.kind == "missing" or not kinds or kinds == {col.kind}:
        return
    raise EnvGateError(
        f"env gate {str(gate)!r} compares feature {node.name!r}, which holds {col.kind} "
        f"values, with {_render(node)!r}; compare a {col.kind} feature with "
        f"{col.kind} literals"
    )
