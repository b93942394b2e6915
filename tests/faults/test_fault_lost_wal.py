"""A ledger that lost its last transactions while git kept what followed them: kill -9 and a
deleted ``-wal`` file, or a power loss under ``synchronous=NORMAL``. Resume brings git and
the ledger back in step (recorded as an event) and finishes the run."""

import shutil
import sqlite3

import pandas as pd
from faultkit import cli

from gsme import evolve, gitrepo, plugins
from gsme.run import Run

AGENT = {"kind": "sim", "preset": "tiny", "infra_fault_rate": 0.0}
EVOLVER = {"kind": "rule"}


def _create(run_dir) -> Run:
    return Run.create(run_dir, agent=plugins.build_agent(AGENT),
                      evolver=plugins.build_evolver(EVOLVER), agent_spec=AGENT,
                      evolver_spec=EVOLVER, run_config={"gate": {"design": "fixed"}},
                      schedule={"rounds": 2, "children_per_round": 2})


def _lose_the_wal(run_dir, checkpointed):
    """The ledger as its file holds it without the ``-wal``: what was last checkpointed."""
    for suffix in ("-wal", "-shm"):
        (run_dir / (Run.LEDGER + suffix)).unlink(missing_ok=True)
    shutil.copyfile(checkpointed, run_dir / Run.LEDGER)


def _branches(run_dir) -> dict:
    repo = gitrepo.HarnessRepo.open(run_dir / Run.REPO)
    rows = repo.candidates()
    return dict(zip(rows["candidate"], rows["commit"]))


def test_rounds_the_ledger_lost_but_git_kept_are_reconciled_and_redone(tmp_path, capsys):
    run_dir = tmp_path / "run"
    with _create(run_dir) as run:
        evolve.cold_start(run, progress=False)
    checkpointed = shutil.copyfile(run_dir / Run.LEDGER, tmp_path / "checkpointed.sqlite")
    with Run.open(run_dir) as run:  # two rounds, then the process dies with the WAL lost
        evolve.evolve(run, progress=False)
        lost = run.decisions()[["child", "parent", "decision", "z"]]
    in_git = _branches(run_dir)
    assert len(in_git) > 3  # the rounds' candidates, which the ledger will not know
    _lose_the_wal(run_dir, checkpointed)
    assert cli(capsys, "verify", run_dir)[:2] == (0, "ok\n")  # nothing was tampered with

    code, _, err = cli(capsys, "resume", run_dir, "--quiet")
    assert code == 0, err  # before: "candidate 'c0001' is the parent of ['c0003']" forever
    assert cli(capsys, "verify", run_dir)[:2] == (0, "ok\n")
    with Run.open(run_dir, read_only=True) as run:
        reconciled = run.events("reconciled")
        assert len(reconciled) == 1
        discarded = reconciled["payload"].iloc[0]["discarded"]
        assert sorted(discarded) == sorted(set(in_git) - {"baseline"})
        assert discarded.index("c0001") > discarded.index("c0003")  # descendants first
        ledger = run.candidates()
        assert dict(zip(ledger["candidate"], ledger["commit"])) == _branches(run_dir)
        redone = run.decisions()[["child", "parent", "decision", "z"]]
        pd.testing.assert_frame_equal(redone, lost)  # the same rounds, decided the same
        assert run.sealed_result is not None and run.rounds_done() == 2


def test_a_row_whose_branch_was_deleted_before_the_row_is_dropped(tmp_path):
    run_dir = tmp_path / "run"
    with _create(run_dir) as run:
        evolve.cold_start(run, progress=False)
        run.mark("round_started", 1, parent="baseline")
        found = evolve.diagnose(run, evolve.failures(run, "baseline", round=1),
                                parent="baseline", round=1)
        (name,) = evolve.commit(run, "baseline",
                                evolve.propose(run, "baseline", found, n=1, round=1), round=1)
    repo = gitrepo.HarnessRepo.open(run_dir / Run.REPO)
    repo.repo.delete_head(f"gsme/{name}", force=True)  # killed between the two deletes
    with Run.open(run_dir) as run:
        payload = run.events("reconciled")["payload"].iloc[0]
        assert payload == {"discarded": [], "dropped": [name]}
        assert name not in set(run.candidates()["candidate"])
    db = sqlite3.connect(run_dir / Run.LEDGER)
    assert db.execute("SELECT count(*) FROM events WHERE kind = 'reconciled'").fetchone() == (1,)
    db.close()
