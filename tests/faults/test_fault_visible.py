"""Failures are visible: infrastructure errors are stored and stop a broken run in one line;
interrupts and closed pipes never print a traceback."""

import signal
import sqlite3
import subprocess
import sys
import time

import pandas as pd
from faultkit import cli, one_line_error, tiny_config

from gsme.run import Run


def _command_run(tmp_path, extra=""):
    pd.DataFrame({"task_id": [f"t{i}" for i in range(8)],
                  "split": ["train"] * 6 + ["test"] * 2}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "r.py").write_text(
        "import json, sys\nfrom pathlib import Path\n"
        "Path(sys.argv[1], 'result.json').write_text(json.dumps({'passed': True}))\n")
    path = tmp_path / "c.toml"
    path.write_text('[run]\ndir = "run"\nrounds = 1\n[agent]\nkind = "command"\n'
                    'tasks = "t.csv"\ncommand = "{python} r.py {out}"\n' + extra +
                    '[evolver]\nkind = "rule"\n')
    return path


def test_a_batch_of_infrastructure_failures_stops_the_run_naming_the_cause(tmp_path, capsys):
    path = _command_run(tmp_path, 'pass_env = ["GSME_SURELY_UNSET_VARIABLE"]\n')
    code, _, err = cli(capsys, "run", path, "--quiet")
    line = one_line_error(err)
    assert code == 2 and "pass_env names variables that are not set" in line
    assert "GSME_SURELY_UNSET_VARIABLE" in line
    with Run.open(tmp_path / "run", read_only=True) as run:
        trials = run.trials()
    assert len(trials) and not trials["infra_ok"].any()
    assert trials["error"].str.contains("GSME_SURELY_UNSET_VARIABLE").all()  # stored


def test_sigint_is_one_line_and_the_run_resumes(tmp_path):
    path = tiny_config(tmp_path / "c.toml", tmp_path / "run", rounds=30)
    proc = subprocess.Popen([sys.executable, "-m", "gsme.cli", "run", str(path), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ledger = tmp_path / "run" / Run.LEDGER
    deadline = time.time() + 120
    while time.time() < deadline and not _round_started(ledger):  # gsme is in its rounds
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().count("\n") == 0 and "interrupted" in err and "Traceback" not in err
    resumed = subprocess.run([sys.executable, "-m", "gsme.cli", "status", str(tmp_path / "run")],
                             capture_output=True, text=True, check=False)
    assert resumed.returncode == 0 and "rounds done" in resumed.stdout


def test_a_closed_pipe_is_quiet(finished):
    proc = subprocess.Popen([sys.executable, "-m", "gsme.cli", "status", str(finished)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `gsme status DIR | head -0`
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert proc.returncode == 0


def _round_started(ledger) -> bool:
    """True once the run has recorded the start of a round (read without a lock)."""
    if not ledger.exists():
        return False
    try:
        db = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
        try:
            return db.execute("SELECT 1 FROM events WHERE kind = 'round_started'").fetchone() \
                is not None
        finally:
            db.close()
    except sqlite3.Error:  # the ledger is still being created
        return False
