"""Env gates: a small declarative predicate over task features, parsed without ``eval``.

A patch declares on which tasks it can act, e.g. ``category == "python" and has_tests``.
gsme reads the gate before running anything, so it knows which tasks a child must be
scored on and on which it behaves exactly as its parent.

A gate is a Python expression, read by :func:`ast.parse` and accepted only when every
node is one of these (lowest precedence first)::

    gate       := or_expr | ""                       (empty: every task)
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | atom
    atom       := "(" or_expr ")" | "true" | "false"
                | NAME                                 (truthy)
                | NAME ("==" | "!=" | "<" | "<=" | ">" | ">=") literal
                | NAME ["not"] "in" "[" [literal ("," literal)*] "]"   (or a tuple)
    literal    := Python string | [+-] int or float | true | false

``True`` and ``False`` are booleans as well; strings follow Python's quoting and escapes.
Calls, attributes, subscripts, arithmetic, ``is`` and chained comparisons
(``0 < n < 5``; write ``n > 0 and n < 5``) are refused. So is a gate longer than
:data:`MAX_LENGTH` characters, spanning several lines, or nested more than
:data:`MAX_DEPTH` levels deep (parentheses, brackets, ``not`` and signs, counted on the
text before it reaches the Python parser).

Semantics. A comparison needs the feature and the literal to be of one kind (bool,
number or string); a mismatch is an error, never a silent False. A missing value (None,
NaN, NA) equals nothing: ``==``, ``in``, the ordering operators and a bare name are False
on it, ``!=`` and ``not in`` are True (so ``a != v`` is always ``not a == v``).
"""

from __future__ import annotations

import ast
import re
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["EnvGate", "EnvGateError", "admitted", "parse"]

MAX_LENGTH = 4000
"""Longest env gate, in characters."""
MAX_DEPTH = 32
"""Deepest nesting of parentheses, brackets, ``not`` and signs in an env gate."""

BOOLS = {"true": True, "false": False}  # lowercase booleans reach ast as names
_OPERATORS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
              ast.GtE: ">="}
_HINTS = {"=": "use '=='", "&": "use 'and'", "|": "use 'or'", "!": "use 'not' or '!='"}
_BAD_CHARACTER = re.compile(r"[\r\n\x00\ud800-\udfff]")
_SCAN = re.compile(r"""(?P<q>'''|\"\"\"|'|")(?:\\.|(?!(?P=q)).)*(?P=q)?|\w+|\S""")


class EnvGateError(ValueError):
    """An env gate that does not parse, or that cannot decide on the features given.

    Examples
    --------
    >>> try:
    ...     parse("category ==")
    ... except EnvGateError as err:
    ...     print(err)
    invalid syntax at column 12 of env gate:
      category ==
                 ^
    """


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
        Shows the expression and points at the column of the offending token. Every
        failure to parse is one, however malformed or deeply nested ``expr`` is.

    Examples
    --------
    >>> str(parse('lang in ["py", "js"] and not (flaky or n > 3.5)'))
    'lang in ["py", "js"] and not (flaky or n > 3.5)'
    >>> parse("n_tests = 2")
    Traceback (most recent call last):
    ...
    gsme.envgate.EnvGateError: invalid syntax (use '==') at column 9 of env gate:
      n_tests = 2
              ^
    """
    if not isinstance(expr, str):
        raise TypeError(f"env gate must be a string, got {type(expr).__name__}")
    body = expr.strip()
    if not body:
        return EnvGate(_Const(True), expr)
    shift = expr.index(body)  # the columns of body within expr start after it
    _check_text(expr, body, shift)
    try:
        with warnings.catch_warnings():  # an invalid escape becomes a SyntaxError
            warnings.simplefilter("error")
            tree = ast.parse(body, mode="eval")
    except SyntaxError as err:
        column = min(err.offset or len(body) + 1, len(body) + 1)  # 0 or None: the end
        message = re.sub(r" \(detected at line \d+\)", "", err.msg)
        hint = _HINTS.get(body[column - 1: column])
        raise _error(expr, shift + column, f"{message} ({hint})" if hint else message) from None
    except (RecursionError, MemoryError):  # a guard against what _check_text misses
        raise _error(expr, shift + 1, "too deeply nested to parse") from None
    return EnvGate(_Reader(expr, body, shift).gate(tree.body), expr)


def admitted(tasks: pd.DataFrame, expr: str | EnvGate) -> pd.DataFrame:
    """The rows of ``tasks`` that the env gate ``expr`` admits (same columns and index).

    See Also
    --------
    parse : The gate as an :class:`EnvGate`, checked once.
    gsme.schema.task_features : The columns a gate may read.

    Examples
    --------
    >>> tasks = pd.DataFrame({"task_id": ["t1", "t2", "t3"], "category": ["git", "web", "git"],
    ...                       "has_tests": [True, False, False]})
    >>> admitted(tasks, "category == 'git' and not has_tests")
      task_id category  has_tests
    2      t3      git      False
    >>> try:
    ...     admitted(tasks, "difficulty > 2")
    ... except EnvGateError as err:
    ...     print(err)
    env gate 'difficulty > 2' reads feature(s) ['difficulty'] that tasks do not have; available columns: ['category', 'has_tests', 'task_id']
    """
    gate = expr if isinstance(expr, EnvGate) else parse(expr)
    return tasks.loc[gate.mask(tasks)]


# ---------------------------------------------------------------------------- parser


def _check_text(expr: str, body: str, shift: int) -> None:
    """Refuse, before Python's parser sees it, a gate too long, on several lines or deep."""
    if len(expr) > MAX_LENGTH:
        raise _error(expr, MAX_LENGTH + 1,
                     f"env gate is {len(expr)} characters long, at most {MAX_LENGTH}")
    bad = _BAD_CHARACTER.search(body)
    if bad:
        raise _error(expr, shift + bad.start() + 1,
                     f"unexpected character {bad.group()!r} (an env gate is one line of text)")
    runs = [0]  # per open bracket: how many prefix operators ('not', signs) run unclosed
    for token in _SCAN.finditer(body):
        text = token.group()
        if text in ("(", "[", "{"):
            runs.append(0)
        elif text in ("not", "-", "+", "~"):
            runs[-1] += 1
        else:  # an operand or a closing bracket ends the run of prefix operators
            if text in (")", "]", "}") and len(runs) > 1:
                runs.pop()
            runs[-1] = 0
            continue
        if len(runs) - 1 + sum(runs) > MAX_DEPTH:
            raise _error(expr, shift + token.start() + 1,
                         f"nested more than {MAX_DEPTH} levels deep")


class _Reader:
    """Turns the Python syntax tree of an env gate into a gate tree, refusing the rest."""

    def __init__(self, expr: str, body: str, shift: int):
        self.expr, self.body, self.shift = expr, body, shift
        self.raw = body.encode()  # ast offsets count UTF-8 bytes

    def fail(self, node: ast.AST, message: str, *, after: ast.AST | None = None):
        """Raise at ``node``, or at the operator that follows ``after``."""
        hints = {ast.BitAnd: "use 'and'", ast.BitOr: "use 'or'"}
        if isinstance(node, ast.BinOp) and type(node.op) in hints:
            message, after = f"{message} ({hints[type(node.op)]})", node.left
        if after is None:
            index = len(self.raw[:node.col_offset].decode())
        else:  # the first character after ``after`` that is not a space or a ')'
            rest = self.body[len(self.raw[:after.end_col_offset].decode()):]
            index = len(self.body) - len(rest.lstrip(" \t\f)"))
        raise _error(self.expr, self.shift + index + 1, message)

    def gate(self, node: ast.AST):
        if isinstance(node, ast.BoolOp):
            items = [self.gate(value) for value in node.values]
            return _flatten(_And if isinstance(node.op, ast.And) else _Or, items)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _Not(self.gate(node.operand))
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if (value := _boolean(node)) is not None:
            return _Const(value)
        if isinstance(node, ast.Name):
            return _Truthy(node.id)
        self.fail(node, "expected a feature name, a comparison, 'not', 'true', 'false' or '('")

    def compare(self, node: ast.Compare):
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if len(node.ops) > 1:
            self.fail(node, "chained comparisons are not supported; join comparisons with "
                            "'and'", after=right)
        if not isinstance(left, ast.Name) or left.id in BOOLS:
            self.fail(left, "expected a feature name on the left of a comparison")
        if isinstance(op, (ast.In, ast.NotIn)):
            if not isinstance(right, (ast.List, ast.Tuple)):
                self.fail(right, "expected '[' to open a list of values")
            values = tuple(self.literal(item) for item in right.elts)
            if len({_kind(v) for v in values}) > 1:
                self.fail(right, "a list of values must hold one kind (all strings, numbers "
                                 "or bools)")
            return _Member(left.id, values, isinstance(op, ast.NotIn))
        symbol = _OPERATORS.get(type(op))
        if symbol is None:
            self.fail(node, "operator 'is' is not supported (use '==' or '!=')", after=left)
        value = self.literal(right)
        if symbol not in ("==", "!=") and isinstance(value, bool):
            self.fail(right, f"operator {symbol!r} needs a number or a string")
        return _Compare(left.id, symbol, value)

    def literal(self, node: ast.AST):
        if (value := _boolean(node)) is not None:
            return value
        signed = isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub))
        number = node.operand if signed else node
        if isinstance(number, ast.Constant) and type(number.value) in (int, float):
            value = -number.value if signed and isinstance(node.op, ast.USub) else number.value
            if abs(value) > sys.float_info.max:
                self.fail(node, f"number is too large (at most {sys.float_info.max:.4g})")
            return value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        self.fail(node, "expected a literal (quoted string, number, true or false)")


def _boolean(node: ast.AST) -> bool | None:
    if isinstance(node, ast.Name) and node.id in BOOLS:
        return BOOLS[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    return None


def _flatten(cls, items: list):
    if len(items) == 1:
        return items[0]
    flat = []
    for item in items:
        flat.extend(item.items if isinstance(item, cls) else (item,))
    return cls(tuple(flat))


def _error(expr: str, column: int, message: str, width: int = 80) -> EnvGateError:
    """An error that shows ``expr`` (or ``width`` characters of it) with a caret under
    ``column``."""
    start = 0 if len(expr) <= width else max(0, min(column - width // 2, len(expr) - width))
    shown = ("..." if start else "") + re.sub(r"[\r\n]", " ", expr[start:start + width]) + (
        "..." if start + width < len(expr) else "")
    caret = " " * (column - 1 - start + (3 if start else 0)) + "^"
    return EnvGateError(f"{message} at column {column} of env gate:\n  {shown}\n  {caret}")


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
    if isinstance(value, str):  # double quotes; backslash and what is not printable escaped
        return '"' + "".join('\\"' if c == '"' else c if c.isprintable() and c != "\\"
                             else repr(c)[1:-1] for c in value) + '"'
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
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "biuf":  # NumPy: as it is
        data = values.to_numpy()
        na = np.isnan(data) if data.dtype.kind == "f" else np.zeros(len(data), dtype=bool)
        if data.dtype.kind == "b":
            return _Col("bool", data.astype(bool), na)
        return _Col("number", np.where(na, 0.0, data.astype(float)), na)
    na = values.isna().to_numpy(dtype=bool)
    if isinstance(values.dtype, pd.StringDtype) and not na.all():  # strings, some missing
        return _Col("string", values.to_numpy(dtype=object, na_value=""), na)
    present = values.to_numpy(dtype=object)[~na]
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
