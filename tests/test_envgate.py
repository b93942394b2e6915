import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gsme.envgate import EnvGate, EnvGateError, admitted, parse


@pytest.fixture
def tasks():
    return pd.DataFrame(
        {
            "task_id": ["t1", "t2", "t3", "t4"],
            "category": ["python", "js", "python", None],
            "has_tests": [True, False, False, True],
            "n_files": [1, 4, 2, 7],
            "score": [0.5, np.nan, 2.5, 1.0],
        }
    )


@pytest.mark.parametrize("expr", ["", "   ", "true", "True"])
def test_empty_and_true_admit_every_task(tasks, expr):
    gate = parse(expr)
    assert gate.mask(tasks).tolist() == [True] * 4
    assert gate.admits({}) is True
    assert gate.names == set()


@pytest.mark.parametrize(
    "expr, expected",
    [
        ("category == 'python'", [True, False, True, False]),
        ('category != "python"', [False, True, False, True]),
        ("has_tests", [True, False, False, True]),
        ("not has_tests", [False, True, True, False]),
        ("has_tests == false", [False, True, True, False]),
        ("n_files > 2", [False, True, False, True]),
        ("n_files >= 2", [False, True, True, True]),
        ("n_files < 2", [True, False, False, False]),
        ("n_files <= 2", [True, False, True, False]),
        ("score > 0.75", [False, False, True, True]),
        ("score <= 2.5", [True, False, True, True]),
        ("score != 0.5", [False, True, True, True]),
        ("score", [True, False, True, True]),
        ("category in ['js', 'go']", [False, True, False, False]),
        ("category not in ['js', 'go']", [True, False, True, True]),
        ("n_files in [1, 7.0]", [True, False, False, True]),
        ("category in []", [False] * 4),
        ("category < 'k'", [False, True, False, False]),
        ("category == 'python' and has_tests", [True, False, False, False]),
        ("category == 'js' or n_files > 5", [False, True, False, True]),
        ("not (category == 'js' or n_files > 5)", [True, False, True, False]),
        ("has_tests or n_files == 2 and category == 'js'", [True, False, False, True]),
        ("(has_tests or n_files == 2) and category == 'python'", [True, False, True, False]),
        ("not not has_tests", [True, False, False, True]),
        ("n_files > -1 and score < 1e1", [True, False, True, True]),
        ("false or has_tests", [True, False, False, True]),
    ],
)
def test_mask_matches_hand_computed_rows(tasks, expr, expected):
    gate = parse(expr)
    assert gate.mask(tasks).tolist() == expected
    rows = tasks.drop(columns="task_id").to_dict("records")
    assert [gate.admits(row) for row in rows] == expected


def test_and_binds_tighter_than_or():
    assert str(parse("a or b and c")) == "a or b and c"
    assert parse("a or b and c") == parse("a or (b and c)")
    assert parse("a or b and c") != parse("(a or b) and c")


def test_canonical_text_and_names():
    gate = parse("( lang in ['py','js'] )and not(flaky or n>3.5)  or x")
    assert str(gate) == 'lang in ["py", "js"] and not (flaky or n > 3.5) or x'
    assert gate.names == {"lang", "flaky", "n", "x"}
    assert parse(str(gate)) == gate
    assert gate.text.startswith("( lang")
    assert repr(gate) == f"EnvGate({str(gate)!r})"


def test_strings_with_quotes_escapes_and_commas_round_trip():
    gate = parse(r"""msg == 'it\'s, "quoted"\\' and tag in ["a,b", 'c']""")
    assert gate.admits({"msg": "it's, \"quoted\"\\", "tag": "a,b"})
    assert not gate.admits({"msg": "it's", "tag": "a,b"})
    assert parse(str(gate)) == gate


def test_pandas_string_and_nullable_dtypes(tasks):
    typed = tasks.astype({"category": "string", "n_files": "Int64", "has_tests": "boolean"})
    gate = parse("category == 'python' and n_files < 3 or has_tests")
    assert gate.mask(typed).tolist() == gate.mask(tasks).tolist() == [True, False, True, True]


def test_missing_values_equal_nothing():
    frame = pd.DataFrame({"a": [None, "x"], "n": [np.nan, 1.0], "b": [None, None]})
    assert parse("a == 'x'").mask(frame).tolist() == [False, True]
    assert parse("a != 'x'").mask(frame).tolist() == [True, False]
    assert parse("n < 5").mask(frame).tolist() == [False, True]
    assert parse("n >= 5").mask(frame).tolist() == [False, False]
    assert parse("b == 'x'").mask(frame).tolist() == [False, False]
    assert parse("b != 3").mask(frame).tolist() == [True, True]
    assert parse("b not in ['x']").mask(frame).tolist() == [True, True]
    assert parse("b").mask(frame).tolist() == [False, False]


def test_mask_does_not_mutate_tasks(tasks):
    before = tasks.copy()
    parse("category == 'python' and score > 1").mask(tasks)
    pd.testing.assert_frame_equal(tasks, before)


def test_admitted_returns_the_admitted_rows(tasks):
    out = admitted(tasks, "category == 'python'")
    assert out["task_id"].tolist() == ["t1", "t3"]
    assert list(out.columns) == list(tasks.columns)
    assert admitted(tasks, parse("has_tests"))["task_id"].tolist() == ["t1", "t4"]


def test_unknown_feature_is_named_with_available_columns(tasks):
    with pytest.raises(EnvGateError, match=r"\['lang'\].*available columns: \['category'"):
        parse("lang == 'py' and has_tests").mask(tasks)
    with pytest.raises(EnvGateError, match=r"\['lang'\].*available features: \['a'\]"):
        parse("lang == 'py'").admits({"a": 1})


@pytest.mark.parametrize(
    "expr, feature",
    [("category == 3", "category"), ("n_files == 'x'", "n_files"),
     ("has_tests in [1, 2]", "has_tests"), ("score == true", "score")],
)
def test_kind_mismatch_is_an_error_not_false(tasks, expr, feature):
    with pytest.raises(EnvGateError, match=f"feature '{feature}'"):
        parse(expr).mask(tasks)


def test_mixed_or_unsupported_values_are_refused():
    with pytest.raises(EnvGateError, match=r"feature 'a'.*\['number', 'string'\]"):
        parse("a == 1").mask(pd.DataFrame({"a": [1, "x"]}))
    with pytest.raises(EnvGateError, match=r"feature 'a'.*list"):
        parse("a").admits({"a": [1, 2]})


@pytest.mark.parametrize(
    "expr, column, message",
    [
        ("a = 1", 3, "use '=='"),
        ("a == 1 && b", 8, "use 'and'"),
        ("a ==", 5, "expected a literal"),
        ("(a and b", 9, "expected ')'"),
        ("a and", 6, "expected a feature name"),
        ("a b", 3, "expected 'and', 'or'"),
        ("a in [1, 'x']", 6, "one kind"),
        ("a in [1 2]", 9, "expected ',' or ']'"),
        ("a in 'x'", 6, "expected '[' to open"),
        ("a not b", 7, "expected 'in'"),
        ("a < true", 5, "needs a number or a string"),
        ("a == 'open", 6, "unterminated string"),
        ("12abc == 1", 1, "unexpected character"),
        ("a == 1e999", 6, "too large"),
        ("a == b", 6, "expected a literal"),
        ("and", 1, "expected a feature name"),
    ],
)
def test_parse_errors_show_expression_and_column(expr, column, message):
    with pytest.raises(EnvGateError) as info:
        parse(expr)
    text = str(info.value)
    assert message in text
    assert f"at column {column} of env gate" in text
    lines = text.splitlines()
    assert lines[-2].strip() == expr
    assert lines[-1].index("^") - lines[-2].index(expr[0]) == column - 1


def test_parse_refuses_non_strings():
    with pytest.raises(TypeError, match="env gate must be a string"):
        parse(None)
    with pytest.raises(TypeError, match="tasks must be a pandas DataFrame"):
        parse("a").mask({"a": [1]})


# ------------------------------------------------------------------ property: round trip

NAMES = st.sampled_from(["a", "b", "c"])
LITERALS = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([0.5, -1.25, 2.0]),
    st.text(alphabet="xy ,'\"\\", max_size=4),
)


def _leaf():
    compare = st.builds(lambda n, o, v: f"{n} {o} {_lit(v)}", NAMES,
                        st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), LITERALS)
    member = st.builds(lambda n, neg, vs: f"{n} {'not in' if neg else 'in'} "
                       f"[{', '.join(_lit(v) for v in vs)}]",
                       NAMES, st.booleans(), st.lists(st.integers(-3, 3), max_size=3))
    return st.one_of(NAMES, compare, member, st.sampled_from(["true", "false"]))


def _lit(value):
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return repr(value)


GATES = st.recursive(
    _leaf(),
    lambda inner: st.one_of(
        st.builds(lambda x: f"not {x}", inner),
        st.builds(lambda x, y, op: f"({x}) {op} ({y})", inner, inner,
                  st.sampled_from(["and", "or"])),
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(GATES)
def test_canonical_text_round_trips(expr):
    gate = parse(expr)
    assert isinstance(gate, EnvGate)
    assert parse(str(gate)) == gate
    assert str(parse(str(gate))) == str(gate)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["a > 0 and not b", "a in [1, 2] or b", "not (a != 1 or b)",
                        "a <= -1 or a >= 2 and b"]),
       st.lists(st.tuples(st.integers(-2, 3), st.booleans()), min_size=1, max_size=6))
def test_mask_agrees_with_admits(expr, rows):
    frame = pd.DataFrame(rows, columns=["a", "b"])
    gate = parse(expr)
    assert gate.mask(frame).tolist() == [gate.admits({"a": a, "b": b}) for a, b in rows]
    assert gate.mask(frame).tolist() == [
        bool(eval(expr, {}, {"a": a, "b": b})) for a, b in rows  # Python as the oracle
    ]
