"""The bundled pyfunc benchmark: task files, split, and the subprocess grader."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from gsme import sandbox
from gsme.resources import PYFUNC_TASKS
from gsme.suites import pyfunc


def test_tasks_frame_has_a_fixed_stratified_split():
    tasks = pyfunc.load_tasks()
    assert len(tasks) == 60
    assert tasks["task_id"].is_unique
    counts = tasks.groupby(["category", "split"]).size().unstack()
    assert set(counts.index) == set(pyfunc.CATEGORIES)
    assert (counts["train"] == 8).all() and (counts["test"] == 4).all()
    assert set(tasks["difficulty"]) == set(pyfunc.DIFFICULTIES)
    assert (~tasks["has_examples"]).sum() == 10
    assert (tasks["has_examples"] == (tasks["n_examples"] > 0)).all()
    assert (tasks["n_hidden"] >= 5).all()


def test_every_reference_passes_its_hidden_tests_and_examples():
    ids = list(pyfunc.load_tasks()["task_id"])
    with ThreadPoolExecutor(max_workers=4) as pool:
        grades = dict(zip(ids, pool.map(lambda t: pyfunc.grade(t, pyfunc.reference(t)), ids)))
        examples = dict(zip(ids, pool.map(lambda t: pyfunc.run_examples(t, pyfunc.reference(t)), ids)))
    failed = {t: g.error for t, g in grades.items() if not g.passed}
    assert failed == {}
    assert all(g.n_passed == g.n_total > 0 for g in grades.values())
    assert {t: e.error for t, e in examples.items() if not e.passed} == {}


def test_public_task_hides_tests_and_reference():
    public = pyfunc.task("rotate")
    assert set(public) == set(pyfunc.PUBLIC_FIELDS)
    assert public["entry_point"] == "rotate"
    assert public["examples"] == [{"call": "rotate([1, 2, 3, 4, 5], 2)", "expected": "[4, 5, 1, 2, 3]"}]
    public["examples"].clear()  # a copy: the stored task is untouched
    assert pyfunc.task("rotate")["examples"]


def test_wrong_solution_fails_without_revealing_hidden_tests():
    careless = "def rotate(xs, k):\n    k %= len(xs)\n    return xs[-k:] + xs[:-k]\n"
    result = pyfunc.grade("rotate", careless)
    assert not result.passed
    assert 0 < result.n_passed < result.n_total
    assert result.error.startswith("1 of 6 hidden tests failed (ZeroDivisionError: 1)")
    assert "rotate(" not in result.error


def test_examples_spell_out_what_failed():
    result = pyfunc.run_examples("rotate", "def rotate(xs, k):\n    return xs[k:] + xs[:k]\n")
    assert (result.passed, result.n_passed, result.n_total) == (False, 0, 1)
    assert result.error == (
        "rotate([1, 2, 3, 4, 5], 2) returned [3, 4, 5, 1, 2]; expected [4, 5, 1, 2, 3]"
    )


def test_task_without_examples_passes_examples_vacuously():
    result = pyfunc.run_examples("dedupe", "this is not python")
    assert (result.passed, result.n_total, result.error) == (True, 0, None)


def test_expected_exception_must_be_raised():
    result = pyfunc.grade("chunk", "def chunk(xs, n):\n    return [xs[i:i + n] for i in range(0, len(xs), max(n, 1))]\n")
    assert not result.passed
    assert "no exception: 2" in result.error


def test_infinite_loop_times_out_as_a_failure():
    result = pyfunc.grade("lcm", "def lcm(a, b):\n    while True:\n        pass\n", timeout_s=1)
    assert (result.passed, result.n_passed, result.error) == (False, 0, "timed out after 1 s")
    assert 1 <= result.seconds < 5


@pytest.mark.parametrize(
    "code, error",
    [
        ("def lcm(a, b)\n    return 0\n", "SyntaxError: expected ':' (line 1)"),
        ("raise RuntimeError('boom')\n", "RuntimeError while loading the solution: boom"),
        ("def gcd(a, b):\n    return 1\n", "the solution defines no function named 'lcm'"),
        ("import os\nos._exit(3)\n", "the test process ended without a report (exit code 3)"),
    ],
)
def test_broken_solutions_fail_with_their_reason(code, error):
    result = pyfunc.grade("lcm", code)
    assert (result.passed, result.n_passed, result.error) == (False, 0, error)


def test_solution_runs_without_the_callers_secrets(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    code = "import os\ndef lcm(a, b):\n    return os.environ.get('ANTHROPIC_API_KEY')\n"
    result = pyfunc.run_examples("lcm", code)
    assert result.error == "lcm(4, 6) returned None; expected 12"


@pytest.mark.skipif(sandbox.unavailable() is not None,
                    reason=f"no sandbox here: {sandbox.unavailable()}")
def test_solutions_see_neither_the_task_files_nor_the_network():
    code = ("import pathlib, socket\ndef lcm(a, b):\n"
            f"    return (pathlib.Path({str(PYFUNC_TASKS / 'lcm.toml')!r}).exists(), "
            "[name for _, name in socket.if_nameindex()])\n")
    result = pyfunc.run_examples("lcm", code)
    assert result.error == "lcm(4, 6) returned (False, ['lo']); expected 12"


def test_unknown_task_and_bad_arguments_are_named():
    with pytest.raises(KeyError, match="unknown pyfunc task_id 'nope'"):
        pyfunc.grade("nope", "")
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        pyfunc.grade("lcm", "", timeout_s=0)
    with pytest.raises(TypeError, match="code must be a str"):
        pyfunc.grade("lcm", None)


@pytest.mark.parametrize(
    "edit, message",
    [
        (("split = \"train\"", "split = \"dev\""), "field 'split' is 'dev'; allowed: \\['train', 'test'\\]"),
        (("id = \"lcm\"", "id = \"other\""), "field 'id' is 'other' but must match the file name"),
        (("raises = \"ValueError\"", "raises = \"Nope\""), "not a builtin exception name"),
        (("expected = \"12\"", "expected = \"12\", raises = \"ValueError\""), "exactly one of"),
    ],
)
def test_malformed_task_files_are_rejected_by_field(tmp_path, edit, message):
    text = (pyfunc.TASK_DIR / "lcm.toml").read_text()
    if "raises" not in text:
        text = text.replace("tests = [", "tests = [\n    { call = \"lcm(1, 1)\", raises = \"ValueError\" },")
    path = tmp_path / "lcm.toml"
    path.write_text(text.replace(*edit, 1))
    with pytest.raises(ValueError, match=message):
        pyfunc._validated(path)
