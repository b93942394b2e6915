"""``gsme grow`` (issue 32): a grow that adds nothing writes nothing (the stored agent spec,
and so a sealed run's report, stay as they were); its summary gives this call's figures.
SIMULATED."""

import re

from faultkit import cli

from gsme import plugins
from gsme.run import Run


def _tasks_file(run_dir, tmp_path, name="tasks.csv"):
    with Run.open(run_dir, read_only=True) as run:
        run.tasks().to_csv(tmp_path / name, index=False)
    return tmp_path / name


def _stored(run_dir):
    with Run.open(run_dir, read_only=True) as run:
        return run.agent_spec, len(run.events()), len(run.trials())


def test_a_grow_that_adds_nothing_leaves_the_run_as_it_was(fresh, tmp_path, capsys):
    before = _stored(fresh)
    report = cli(capsys, "report", fresh)
    code, out, _ = cli(capsys, "grow", fresh, "--tasks", _tasks_file(fresh, tmp_path),
                       "--agent", "grown=5", "--quiet")
    assert code == 0 and _stored(fresh) == before  # the spec is not grown=5: nothing added
    assert "0 by this call" in out
    assert cli(capsys, "report", fresh) == report
    assert cli(capsys, "verify", fresh)[:2] == (0, "ok\n")


def _summary(out):
    line = next(s for s in out.splitlines() if s.startswith("gsme grow:"))
    found = re.search(r"(\d+) added by growing \((\d+) by this call\); this call ran (\d+) "
                      r"trials and borrowed (\d+)", line)
    assert found, line
    return tuple(map(int, found.groups()))


def test_the_summary_gives_this_calls_figures(fresh, tmp_path, capsys):
    grown = tmp_path / "grown.csv"
    code, _, _ = cli(capsys, "grow", fresh, "--tasks", _tasks_file(fresh, tmp_path),
                     "--agent", "grown=4", "--quiet")
    with Run.open(fresh, read_only=True) as run:
        spec = run.agent_spec
    assert code == 0 and "grown" not in spec  # nothing added: the spec is unchanged
    plugins.build_agent({**spec, "grown": 4}).tasks().to_csv(grown, index=False)
    code, out, _ = cli(capsys, "grow", fresh, "--tasks", grown, "--agent", "grown=4", "--quiet")
    added, now, ran, borrowed = _summary(out)
    assert code == 0 and added == now == 4 and ran + borrowed > 0
    with Run.open(fresh, read_only=True) as run:
        assert run.agent_spec == {**spec, "grown": 4}
    code, out, _ = cli(capsys, "grow", fresh, "--tasks", grown, "--quiet")  # again: nothing new
    assert code == 0 and _summary(out) == (4, 0, 0, 0)
