"""Graded scores end to end on the real path: a command agent whose grader gives a share of
checks (``tests/scripts/graded_runner.py``), run by ``gsme run`` in its sandbox, its scores
in the ledger, the gates deciding on them, and ``gsme compare --on score`` on the trials."""

import json
import shutil
from pathlib import Path

import pandas as pd

from gsme import gates
from gsme.cli import main
from gsme.run import Run

RUNNER = Path(__file__).parent / "scripts" / "graded_runner.py"


def test_a_graded_command_agent_is_gated_on_its_scores(tmp_path, monkeypatch, capsys):
    shutil.copy(RUNNER, tmp_path / "runner.py")
    pd.DataFrame({"task_id": [f"t{i:02d}" for i in range(18)],
                  "split": ["train"] * 12 + ["test"] * 6,
                  "category": ["py", "sh"] * 9}).to_csv(tmp_path / "tasks.csv", index=False)
    (tmp_path / "graded.toml").write_text(
        '[run]\ndir = "run"\nrounds = 1\nchildren_per_round = 2\nrun_seed = 3\n'
        '[agent]\nkind = "command"\ntasks = "tasks.csv"\nthreshold = 1.0\nnetwork = false\n'
        'command = "{python} runner.py {harness} {task_id} {repeat} {run_seed} {out}"\n'
        '[evolver]\nkind = "rule"\nseed = 3\n')
    monkeypatch.chdir(tmp_path)
    assert main(["run", "graded.toml", "--quiet"]) == 0
    capsys.readouterr()
    with Run.open(tmp_path / "run", read_only=True) as run:
        trials, candidates, decided = run.trials(), run.candidates(), run.decisions()
        gate = run.config.gate
    valid = trials[trials["infra_ok"]]
    assert valid["score"].notna().all()  # every valid trial kept its grade
    assert set(valid["score"]) <= {0.0, 0.25, 0.5, 0.75, 1.0} and valid["score"].between(
        0, 1).all() and (valid["score"] % 1 != 0).any()
    assert (valid["passed"] == (valid["score"] >= 1.0)).all()  # passed by the threshold
    again = gates.credit(trials[trials["split"] == "train"], candidates, gate=gate)
    assert again[["child", "delta_pp", "decision"]].equals(
        decided[["child", "delta_pp", "decision"]])
    on_passed = gates.credit(trials[trials["split"] == "train"].drop(columns="score"),
                             candidates, gate=gate)
    assert not on_passed["delta_pp"].equals(decided["delta_pp"])  # the scores decided

    test = trials[trials["split"] == "test"]
    for name in test["candidate"].unique():
        test[test["candidate"] == name].to_csv(tmp_path / f"{name}.csv", index=False)
    names = sorted(test["candidate"].unique(), key=lambda n: n != "baseline")
    child = names[-1] if len(names) > 1 else "baseline"
    assert main(["compare", f"{names[0]}.csv", f"{child}.csv", "--on", "score",
                 "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["outcome"] == "score" and row["n_tasks"] == 6
