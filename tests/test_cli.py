"""The gsme command: demo, run/resume after kill -9, status, report, clean errors."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
import pytest

from gsme.cli import main
from gsme.patches import read_patches
from gsme.run import Run

KEY = ["candidate", "task_id", "split", "repeat", "attempt"]


def _gsme(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "gsme.cli", *map(str, args)],
                          check=False, capture_output=True, text=True, timeout=timeout)


def _config(path, run_dir, rounds=3, preset="tb2"):
    path.write_text(
        f'[run]\ndir = "{run_dir}"\nrounds = {rounds}\nchildren_per_round = 3\n'
        f'recombinations_per_round = 1\nrun_seed = 5\nworkers = 2\n\n'
        f'[agent]\nkind = "sim"\npreset = "{preset}"\nsuite_seed = 5\ninfra_fault_rate = 0.05\n\n'
        f'[evolver]\nkind = "rule"\nseed = 5\n'
    )
    return path


def test_demo_runs_end_to_end_and_says_simulated(tmp_path, capsys):
    assert main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "2", "--out", str(tmp_path / "d"),
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" in out
    assert "sealed_delta_pp" in out and "retention_pct" in out
    with Run.open(tmp_path / "d", read_only=True) as run:
        assert run.sealed and run.sealed_result is not None


def test_bad_config_exits_2_without_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[run]\ndir = "x"\npolicy = "hopeful"\n')
    result = _gsme("run", bad)
    assert result.returncode == 2
    assert "policy" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("text, message", [
    (None, "does not exist"),
    ("[run\n", "not valid TOML"),
    ('[run]\nrounds = 2\n', "needs the run directory"),
    ('[run]\ndir = "x"\n[agent]\nkind = "robot"\n', "must be one of"),
    ('[run]\ndir = "x"\n[agent]\nkind = "sim"\npreset = "nope"\n', "preset"),
    ('[run]\ndir = "x"\n[extra]\n', "unknown table"),
    ('[run]\ndir = "x"\n[evolver]\nkind = "claude"\napi_key = "sk-ant-x"\n', "environment"),
])
def test_config_errors_name_what_is_wrong(tmp_path, capsys, text, message):
    path = tmp_path / "c.toml"
    if text is not None:
        path.write_text(text)
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("gsme: error:")
    assert "sk-ant" not in err


def test_damaged_run_directory_exits_2(tmp_path, capsys):
    (tmp_path / "junk").mkdir()
    for command in ("resume", "status", "report"):
        assert main([command, str(tmp_path / "junk")]) == 2, command
        assert "not a gsme run directory" in capsys.readouterr().err


def test_status_and_report_read_a_finished_run(tmp_path, capsys):
    cfg = _config(tmp_path / "c.toml", tmp_path / "run", rounds=1, preset="tiny")
    assert main(["run", str(cfg), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["status", str(tmp_path / "run")]) == 0
    assert "rounds done: 1 of 1" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "train_delta_pp" in out and "SIMULATED" in out
    assert main(["run", str(cfg)]) == 2
    assert "gsme resume" in capsys.readouterr().err


def _ledger_state(path):
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        trials = db.execute("SELECT COUNT(*) FROM trials WHERE round >= 2").fetchone()[0]
        done = db.execute("SELECT COUNT(*) FROM events WHERE kind = 'round_done' AND round >= 2"
                          ).fetchone()[0]
        db.close()
        return trials, done
    except sqlite3.Error:
        return 0, 0


def test_kill_9_mid_round_then_resume_equals_an_uninterrupted_run(tmp_path):
    whole = _gsme("run", _config(tmp_path / "whole.toml", tmp_path / "whole"), "--quiet")
    assert whole.returncode == 0, whole.stderr

    cfg = _config(tmp_path / "killed.toml", tmp_path / "killed")
    proc = subprocess.Popen([sys.executable, "-m", "gsme.cli", "run", str(cfg), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ledger = tmp_path / "killed" / Run.LEDGER
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        trials, done = _ledger_state(ledger) if ledger.exists() else (0, 0)
        if trials > 20 and done == 0:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"

    resumed = _gsme("resume", tmp_path / "killed", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    a = Run.open(tmp_path / "whole", read_only=True)
    b = Run.open(tmp_path / "killed", read_only=True)
    ta, tb = a.trials(), b.trials()
    assert not tb.duplicated(KEY).any()
    cols = KEY + ["passed", "infra_ok", "activated", "borrowed_from"]
    pd.testing.assert_frame_equal(ta[cols].sort_values(KEY, ignore_index=True),
                                  tb[cols].sort_values(KEY, ignore_index=True))
    dcols = ["child", "parent", "decision", "z"]
    pd.testing.assert_frame_equal(a.decisions()[dcols], b.decisions()[dcols])
    pd.testing.assert_frame_equal(a.sealed_result, b.sealed_result)


@pytest.mark.parametrize("argv", [["demo", "--rounds", "x"], ["frobnicate"]])
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_a_users_own_runner_evolves_through_the_command_agent(tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    runner = Path(__file__).parent / "scripts" / "harness_runner.py"
    shutil.copy(runner, tmp_path / "runner.py")
    tasks = pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(22)],
                          "split": ["train"] * 14 + ["test"] * 8,
                          "category": ["py", "sh"] * 11})
    tasks.to_csv(tmp_path / "tasks.csv", index=False)
    (tmp_path / "mine.toml").write_text(
        '[run]\ndir = "run"\nrounds = 2\nchildren_per_round = 2\nrun_seed = 3\nworkers = 2\n'
        '[agent]\nkind = "command"\ntasks = "tasks.csv"\n'
        'command = "{python} runner.py {harness} {task_id} {repeat} {run_seed} {out}"\n'
        '[evolver]\nkind = "rule"\nseed = 3\n'
    )
    monkeypatch.chdir(tmp_path.parent)  # paths in the config are relative to the config
    assert main(["run", str(tmp_path / "mine.toml"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED" not in out and "train_delta_pp" in out
    run = Run.open(tmp_path / "run", read_only=True)
    trials = run.trials()
    assert trials["infra_ok"].all() and (trials["tokens"] == 900).all()
    assert set(run.tasks("test")["task_id"]) == set(trials.loc[trials["split"] == "test",
                                                               "task_id"])
    decided = run.decisions().merge(run.candidates(), left_on="child", right_on="candidate")
    verify = [c for c in decided["child"]
              if any(p.mechanism == "submit-verify" for p in read_patches(run.harness(c)))]
    assert verify, "the rule evolver should try submit-verify on a careless runner"
    assert (decided.set_index("child").loc[verify, "decision"] == "credit").any()
    assert run.sealed_result is not None


def test_a_run_whose_baseline_fails_nothing_says_so_and_seals(tmp_path, monkeypatch, capsys):
    tasks = pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(10)],
                          "split": ["train"] * 6 + ["test"] * 4})
    tasks.to_csv(tmp_path / "tasks.csv", index=False)
    (tmp_path / "easy.toml").write_text(
        '[run]\ndir = "run"\nrounds = 3\n'
        '[agent]\nkind = "command"\ntasks = "tasks.csv"\n'
        'command = "{python} -c \\"import json, sys; json.dump({{\'passed\': True}}, '
        'open(sys.argv[1] + \'/result.json\', \'w\'))\\" {out}"\n'
        '[evolver]\nkind = "rule"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["run", "easy.toml"]) == 0
    out = capsys.readouterr().out
    assert "round 1: no child of baseline: baseline failed no train trial: nothing to fix" in out
    assert ("evolution stopped: round 1 made no child (baseline failed no train trial: "
            "nothing to fix); on to the sealed test") in out
    assert "round 2" not in out and "sealed_decision" in out
    assert "keep the baseline: the run kept no child that beat the baseline" in out
    assert main(["resume", "run"]) == 0  # sealed: nothing more to do


def _on_a_terminal(monkeypatch):
    """Progress bars show as on a terminal: tqdm draws on stderr when it is a tty."""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)


def _demo(tmp_path, name, *flags):
    return main(["demo", "--preset", "tiny", "--design", "fixed", "--rounds", "1",
                 "--out", str(tmp_path / name), *flags])


def test_quiet_hides_the_progress_bars_and_keeps_every_line(tmp_path, capsys, monkeypatch):
    _on_a_terminal(monkeypatch)
    assert _demo(tmp_path, "shown") == 0
    shown = capsys.readouterr()
    assert "rounds" in shown.err and "%|" in shown.err  # the bars a terminal shows
    assert _demo(tmp_path, "quiet", "--quiet") == 0
    quiet = capsys.readouterr()
    assert quiet.err == ""
    same = quiet.out.replace(str(tmp_path / "quiet"), str(tmp_path / "shown"))
    assert same == shown.out  # the same lines, bars aside
    assert "gsme demo: SIMULATED" in quiet.out and "round 1:" in quiet.out
    assert "sealed_delta_pp" in quiet.out and f"run directory: {tmp_path / 'quiet'}" in quiet.out


def test_no_progress_bar_is_drawn_where_stderr_is_not_a_terminal(tmp_path, capsys):
    assert _demo(tmp_path, "piped") == 0  # capsys's stderr is no terminal, as a pipe or file
    out, err = capsys.readouterr()
    assert err == "" and "round 1:" in out


def test_silent_prints_only_the_ship_line(tmp_path, capsys, monkeypatch):
    from gsme import report

    _on_a_terminal(monkeypatch)
    assert _demo(tmp_path, "silent", "--silent") == 0
    out, err = capsys.readouterr()
    with Run.open(tmp_path / "silent", read_only=True) as run:
        line = report.run_ship_line(run)
    assert line.startswith(("ship ", "keep the baseline")) and out == f"{line}\n" and err == ""
    cfg = _config(tmp_path / "c.toml", tmp_path / "run", rounds=1, preset="tiny")
    assert main(["run", str(cfg), "--silent", "--json"]) == 0
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1 and json.loads(out)["ship"].startswith(("ship ", "keep"))
    assert err == ""


def test_compare_shows_a_progress_bar_on_a_terminal_and_none_with_quiet(capsys, monkeypatch):
    from pathlib import Path

    logs = Path(__file__).parent / "data" / "importers" / "tb"
    _on_a_terminal(monkeypatch)
    assert main(["compare", str(logs / "baseline"), str(logs / "child")]) == 0
    shown = capsys.readouterr()
    assert "gsme compare: reading the logs" in shown.err and "gating" in shown.err
    assert main(["compare", str(logs / "baseline"), str(logs / "child"), "--quiet"]) == 0
    quiet = capsys.readouterr()
    assert quiet.err == "" and quiet.out == shown.out


def test_every_quiet_flag_says_it_hides_only_progress_bars():
    from gsme.cli import _parser

    commands = _parser("0")._subparsers._group_actions[0].choices
    quiet = {name: next((a.help for a in p._actions if "--quiet" in a.option_strings), None)
             for name, p in commands.items()}
    silent = {name for name, p in commands.items()
              if any("--silent" in a.option_strings for a in p._actions)}
    assert {name for name, text in quiet.items() if text} == {
        "demo", "run", "resume", "view", "compare", "grow", "export"}
    assert {text for text in quiet.values() if text} == {
        "no progress bars (shown on a terminal only); every line stays"}
    assert silent == {"demo", "run", "resume"}


def test_the_command_line_imports_nothing_heavy_until_a_command_runs():
    """``gsme --help`` and ``--version`` list commands and registered names only: the
    libraries a command needs are imported when it runs (benchmarks/bench_startup.py times
    it)."""
    code = ("import contextlib, io, sys, gsme.cli\n"
            "for argv in (['--help'], ['--version']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        gsme.cli.main(argv)\n"
            "heavy = {'pandas', 'numpy', 'scipy', 'pydantic', 'matplotlib'}\n"
            "print(sorted(heavy & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_old_gate_flag_still_sets_the_design_and_says_it_is_renamed(capsys):
    from gsme.cli import _parser

    args = _parser("0", commands=["demo"]).parse_args(["demo", "--gate", "fixed"])
    assert args.design == "fixed"
    assert "--gate is now --design (the old name goes in 0.4.0)" in capsys.readouterr().err
    assert _parser("0", commands=["demo"]).parse_args(["demo", "--design", "fixed"]).design == "fixed"
    with pytest.raises(SystemExit):
        _parser("0", commands=["demo"]).parse_args(["demo", "--help"])
    shown = capsys.readouterr().out
    assert "--design" in shown and "--gate" not in shown  # one flag in the help
