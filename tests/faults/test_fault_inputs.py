"""Bad input to `gsme compare` and `gsme plan` is one line naming the problem, exit 2, and
nothing is written."""

import pytest
from faultkit import cli, one_line_error

HEADER = b"candidate,task_id,split,repeat,passed\n"
FILES = {
    "empty": (b"", "is not a readable trials CSV (No columns to parse from file)"),
    "header_only": (HEADER, "no trials in"),
    "binary": (bytes(range(256)) * 2, "is not a readable trials CSV"),
    "latin1": (HEADER + "bas\xe9,t1,train,0,1\n".encode("latin-1"), "not UTF-8 text"),
    "badly_quoted": (HEADER + b'"baseline,t1,train,0,1\nv2,"t1,train,0,1\n',
                     "trials column 'passed' must be bool"),
    "duplicated": (HEADER + b"baseline,t1,train,0,1\nbaseline,t1,train,0,0\n",
                   "must be unique; 2 rows share a key"),
}


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("command", ["compare", "plan"])
def test_a_bad_trials_csv_is_one_line(tmp_path, capsys, name, command):
    data, says = FILES[name]
    path = tmp_path / f"{name}.csv"
    path.write_bytes(data)
    argv = ([command, path, path] if command == "compare" else
            [command, "--tasks", "20", "--effect", "5", "--aa", path, path])
    code, out, err = cli(capsys, *argv)
    assert code == 2 and says in one_line_error(err) and out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.parametrize("argv, says", [
    (["--k", "1000000000"], "k must be at most 100 repeats per task"),
    (["--effect", "nan"], "effect_pp must be a difference of pass rates"),
    (["--effect", "200"], "between 0 and 100, got 200.0"),
])
def test_a_plan_of_the_impossible_is_one_line(capsys, argv, says):
    base = {"--tasks": "45", "--effect": "5"}
    base.update(zip(argv[::2], argv[1::2]))
    code, _, err = cli(capsys, "plan", *[x for kv in base.items() for x in kv])
    assert code == 2 and says in one_line_error(err)


def test_a_plan_says_why_a_figure_is_missing_or_zero(capsys):
    code, out, _ = cli(capsys, "plan", "--tasks", "3", "--effect", "5")
    assert code == 0 and "NaN" not in out
    assert "fixed: k_needed n/a: no K up to 100 reaches 80% power with 3 tasks" in out
    assert "adaptive: power 0: none of the simulated comparisons was credited" in out
