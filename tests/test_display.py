"""What a user sees: CLI conventions (version, JSON, help on every argument, progress) and
the rich notebook display of a run and of a round."""

import json
import sys

import pytest

from gsme import __version__, _cli_common, cli, evolve, measure, sim
from gsme.evolvers.rule import RuleEvolver
from gsme.run import Run


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    path = tmp_path_factory.mktemp("display") / "run"
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "1", "--out", str(path),
                     "--quiet"]) == 0
    return path


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"gsme {__version__}"


def test_every_argument_of_every_command_has_help():
    parser = cli._parser(__version__)
    commands = next(a for a in parser._actions if a.dest == "==SUPPRESS==" or a.choices)
    assert set(commands.choices) >= {"demo", "run", "resume", "status", "report"}
    for name, sub in commands.choices.items():
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"gsme {name} {action.option_strings or action.dest}"


@pytest.mark.parametrize("command", ["status", "report"])
def test_json_output_parses(sealed, capsys, command):
    assert cli.main([command, str(sealed), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    if command == "status":
        assert data["rounds_done"] == 1 and data["sealed"] == "yes"
        assert 0 <= data["coverage"] <= 1 and data["cells"] == 4 * 7
    else:
        assert data["simulated"] is True and "sealed_delta_pp" in data
        assert data["significance_tests"] >= 0


def test_report_labels_every_p_one_sided_and_the_false_credits_if_null(sealed, capsys):
    assert cli.main(["report", str(sealed)]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines if line.strip()]
    assert {"train_p_one_sided", "sealed_p_one_sided", "false_credits_if_null"} <= set(names)
    assert not [n for n in names if n.endswith("_p") or "p_value" in n]
    assert "false_credits_bound" not in names
    assert lines[0].startswith(("ship c", "keep the baseline: ")) and "sealed Δ" in lines[0]
    assert any(line.startswith("(rates, Δ and pass@3: the selected harness and the baseline "
                               "over the first 3 repeats") for line in lines)
    assert not [line for line in lines if "nan" in line.lower().split()]


def test_every_command_prints_the_one_ship_line(sealed, capsys, tmp_path):
    from gsme import report

    with Run.open(sealed, read_only=True) as run:
        line = report.ship_line(report.recommendation(report.run_table(run)))
    for command in (["report", str(sealed)], ["status", str(sealed)],
                    ["view", str(sealed), "--out", str(tmp_path / "v.html")]):
        assert cli.main(command) == 0
        assert line in capsys.readouterr().out.splitlines(), command
    assert cli.main(["report", str(sealed), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ship"] == line


def test_a_demo_in_a_temporary_folder_says_where_and_how_to_remove_it(tmp_path, capsys,
                                                                     monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "1",
                     "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    made = [p for p in tmp_path.iterdir() if p.name.startswith("gsme-demo-tiny-")]
    assert len(made) == 1
    assert out[-2] == f"run directory: {made[0]}"
    assert out[-1].endswith(f"`rm -rf {made[0]}` removes it)")
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "1", "--quiet",
                     "--out", str(tmp_path / "mine")]) == 0
    assert "rm -rf" not in capsys.readouterr().out


def test_empty_rounds_say_why_and_stop_the_search(tmp_path, capsys):
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "5",
                     "--children", "0", "--out", str(tmp_path / "e")]) == 0
    out = capsys.readouterr().out.splitlines()
    rounds = [line for line in out if line.startswith("round ")]
    assert len(rounds) == 2  # Schedule.empty_rounds
    assert rounds[0].startswith("round 1: no child of baseline: the evolver proposed no "
                                "patch from ")
    assert "no recombination of archive elites left to try" in rounds[0]
    stop = [line for line in out if line.startswith("evolution stopped: ")]
    assert len(stop) == 1 and stop[0].startswith(
        "evolution stopped: 2 rounds in a row made no child (round 2: the evolver proposed no "
        "patch from ")
    assert stop[0].endswith("left to try); on to the sealed test")


def test_status_reports_coverage_over_the_vocabulary_cells(sealed, capsys):
    assert cli.main(["status", str(sealed)]) == 0
    out = capsys.readouterr().out
    assert "coverage NaN" not in out and "in 28 cells (coverage" in out


def test_a_run_and_a_round_display_as_tables(tmp_path):
    with Run.create(tmp_path / "r", agent=sim.preset("tiny"), evolver=RuleEvolver()) as run:
        result = evolve.run_round(run, children=2, recombinations=0, progress=False)
        page = run._repr_html_()
        for text in (str(tmp_path / "r"), "SIMULATED", "rounds done", "sealed", "trials spent"):
            assert text in page
        table = result._repr_html_()
        assert f"round {result.round}" in table and "<table" in table
        kept, credited = int(result.decisions["kept"].sum()), int(
            (result.decisions["decision"] == "credit").sum())
        assert f"{kept} kept, {credited} credited" in table
        assert "p_one_sided" in table and "expected_delta_pp" in table
        for name in result.decisions["child"]:
            assert name in table


def test_progress_bars_name_rounds_and_the_sealed_test(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # bars draw on a terminal only
    with Run.create(tmp_path / "r", agent=sim.preset("tiny"), evolver=RuleEvolver(),
                    schedule={"rounds": 1, "children_per_round": 1}) as run:
        evolve.evolve(run, progress=True)
        measure.finalize(run, progress=True)
    err = capsys.readouterr().err
    assert "rounds" in err and "round 1: scoring" in err and "sealed test: scoring" in err


def test_demo_prints_a_line_per_round_and_json_lines_with_json(tmp_path, capsys):
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "2", "--out",
                     str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out.splitlines()
    rounds = [line for line in out if line.startswith("round ")]
    assert [line.split(":")[0] for line in rounds] == ["round 1", "round 2"]
    assert "kept" in rounds[0] and "credited" in rounds[0] and "trials spent" in rounds[0]
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "2", "--out",
                     str(tmp_path / "b"), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line.get("round") for line in lines[:2]] == [1, 2]
    with Run.open(tmp_path / "b", read_only=True) as run:
        decided = run.decisions()
        test = run.trials(split="test")
        assert lines[1]["trials_spent"] == run.trials_spent() - test["borrowed_from"].isna().sum()
    for line, r in zip(lines[:2], (1, 2)):
        mine = decided[decided["round"] == r]
        assert line["kept"] == int(mine["kept"].sum())
        assert line["credited"] == int((mine["decision"] == "credit").sum())
    assert "sealed_delta_pp" in lines[-1]
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "1", "--out",
                     str(tmp_path / "c"), "--silent"]) == 0
    assert not [x for x in capsys.readouterr().out.splitlines() if x.startswith("round ")]


def test_printed_numbers_are_rounded_for_people():
    number = _cli_common.number  # how every command prints a number
    assert number(-0.0) == "0" and number(-0.0001) == "-0.0001"
    assert number(0.0004, p=True) == "< 0.001"
    assert number(0.0123, p=True) == "0.012"
    assert number(3701.4) == "3701" and number(15.63) == "15.6"
    assert number(float("nan")) == "n/a"


def test_a_demo_refused_prints_no_banner(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("")
    assert cli.main(["demo", "--preset", "tiny", "--design", "fixed", "--out", str(tmp_path / "d")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("gsme: error: ")
