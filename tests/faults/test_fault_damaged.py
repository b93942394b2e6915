"""Damaged, read-only, half-made, tampered and foreign run directories: one line, exit 2."""

import json
import os
import sqlite3
import stat

import pytest
from faultkit import cli, one_line_error

from gsme import evolve, gitrepo, measure, sim
from gsme.ledger import Ledger
from gsme.run import Run, RunError

LEDGER = Run.LEDGER


def files_of(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def damage(path, how):
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 3])
    elif how == "overwritten":
        path.write_bytes(b"\x00garbage" * 500)
    elif how == "header":
        path.write_bytes(b"not a database at all" + data[21:])
    elif how == "empty":
        path.write_bytes(b"")


@pytest.mark.parametrize("how", ["truncated", "overwritten", "header", "empty"])
@pytest.mark.parametrize("command", ["status", "report", "resume"])
def test_a_damaged_ledger_is_one_line_and_left_as_it_was(fresh, capsys, how, command):
    damage(fresh / LEDGER, how)
    before = (fresh / LEDGER).read_bytes()
    code, _, err = cli(capsys, command, fresh)
    assert code == 2
    assert "ledger" in one_line_error(err) or "damaged" in err
    assert (fresh / LEDGER).read_bytes() == before  # never "repaired" by a fresh schema


def test_read_only_opening_writes_nothing(fresh, capsys):
    def state():  # SQLite's own -wal/-shm index files aside, nothing may change
        return {p: (fresh / p).stat().st_mtime_ns for p in files_of(fresh)
                if not p.endswith(("-wal", "-shm"))}

    before, ledger = state(), (fresh / LEDGER).read_bytes()
    assert cli(capsys, "status", fresh)[0] == 0
    assert cli(capsys, "report", fresh)[0] == 0
    with Run.open(fresh, read_only=True) as run:
        with pytest.raises(RunError, match="read-only"):
            run.mark("round_started", 9, parent="baseline")
        assert measure.finalize(run).equals(run.sealed_result)  # the stored result; nothing scored
        assert not run.trials().empty
    assert state() == before and (fresh / LEDGER).read_bytes() == ledger


def test_an_archived_run_in_an_unwritable_folder_is_read_immutable(fresh, monkeypatch,
                                                                   capsys):
    # as root every folder is writable, so have the ledger see an unwritable one
    import gsme.ledger as ledger_module

    monkeypatch.setattr(ledger_module, "_writable", lambda folder: False)
    seen = []
    real = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect",
                        lambda database, **kw: seen.append(database) or real(database, **kw))
    assert cli(capsys, "status", fresh)[0] == 0
    assert any("immutable=1" in str(u) for u in seen)


def test_report_on_an_unsealed_run_says_how_to_finish_it(tmp_path, capsys):
    with Run.create(tmp_path / "r", agent=sim.preset("tiny"),
                    agent_spec={"kind": "sim", "preset": "tiny"}, schedule={}) as run:
        evolve.cold_start(run, progress=False)
    code, _, err = cli(capsys, "report", tmp_path / "r")
    assert code == 2 and "not sealed yet" in one_line_error(err)
    code, out, _ = cli(capsys, "status", tmp_path / "r")
    assert code == 0 and "sealed: no" in out


def test_a_run_killed_while_sealing_is_not_reported_and_resumes_sealing(tmp_path, capsys,
                                                                         monkeypatch):
    with Run.create(tmp_path / "r", agent=sim.preset("tiny"), schedule={"rounds": 0},
                    agent_spec={"kind": "sim", "preset": "tiny"},
                    evolver_spec={"kind": "rule"}) as run:
        evolve.cold_start(run, progress=False)
        import gsme.run as run_module

        calls = []
        real = run_module.scoring.execute

        def die(specs, **kw):
            calls.append(len(specs))
            raise KeyboardInterrupt

        monkeypatch.setattr(run_module.scoring, "execute", die)
        with pytest.raises(KeyboardInterrupt):
            measure.finalize(run, progress=False)
        monkeypatch.setattr(run_module.scoring, "execute", real)
    assert calls
    code, out, _ = cli(capsys, "status", tmp_path / "r")
    assert "sealed: sealing (test split partly scored)" in out
    code, _, err = cli(capsys, "report", tmp_path / "r")
    assert code == 2 and "not sealed yet" in err
    assert cli(capsys, "resume", tmp_path / "r", "--quiet")[0] == 0
    with Run.open(tmp_path / "r", read_only=True) as run:
        assert run.sealed_result is not None


@pytest.mark.parametrize("point", ["ledger", "repo", "event"])
def test_a_run_killed_while_being_created_leaves_nothing(tmp_path, monkeypatch, point):
    targets = {"ledger": (Ledger, "put"), "repo": (gitrepo.HarnessRepo, "init"),
               "event": (Ledger, "event")}
    owner, name = targets[point]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(owner, name, killed)
    with pytest.raises(KeyboardInterrupt):
        Run.create(tmp_path / "r", agent=sim.preset("tiny"))
    monkeypatch.undo()
    assert files_of(tmp_path) == []  # no half-made run, no staging folder
    Run.create(tmp_path / "r", agent=sim.preset("tiny")).close()  # and it can be made again


def test_relabelling_test_tasks_as_train_is_detected(fresh, capsys):
    db = sqlite3.connect(fresh / LEDGER)
    tasks = json.loads(json.loads(db.execute(
        "SELECT value FROM meta WHERE key = 'tasks'").fetchone()[0]))
    tasks["data"] = [[row[0], "train", *row[2:]] for row in tasks["data"]]
    db.execute("UPDATE meta SET value = ? WHERE key = 'tasks'",
               (json.dumps(json.dumps(tasks)),))
    db.commit()
    db.close()
    for command in ("status", "resume"):
        code, _, err = cli(capsys, command, fresh)
        assert code == 2 and "committed when the run was created" in one_line_error(err)


def test_sealing_follows_from_append_only_events(fresh, capsys):
    db = sqlite3.connect(fresh / LEDGER)
    db.execute("DELETE FROM meta")  # what unsealed a run before
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("DELETE FROM events WHERE kind LIKE 'seal%'")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        db.execute("UPDATE events SET kind = 'x' WHERE kind = 'sealed'")
    db.commit()
    db.close()
    code, _, err = cli(capsys, "resume", fresh)
    assert code == 2 and "damaged" in err  # refused; never treated as unsealed
    with pytest.raises(RunError):
        Run.open(fresh)


def test_a_foreign_run_directory_runs_none_of_its_git_hooks(fresh, tmp_path, capsys):
    marker = tmp_path / "ran"
    script = fresh / "harness" / ".git" / "hooks" / "reference-transaction"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    for hook in ("post-checkout", "pre-commit", "post-commit", "post-merge"):
        other = script.with_name(hook)
        other.write_text(script.read_text())
        other.chmod(0o755)
    monitor = tmp_path / "monitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}\n")
    monitor.chmod(0o755)
    with open(fresh / "harness" / ".git" / "config", "a") as config:
        config.write(f"[core]\n\tfsmonitor = {monitor}\n\thooksPath = .git/hooks\n")
    repo = gitrepo.HarnessRepo.open(fresh / "harness")
    from gsme.patches import FileChange, Patch

    repo.add_mutation("baseline", Patch(id="x", where="prompt", why="looping", mechanism="m",
                                        beacon="x", changes=(FileChange("prompt/x.md", "x"),)),
                      round=9)
    repo.annotate("baseline", {"seen": True})
    repo.repo.git.status()
    assert cli(capsys, "status", fresh)[0] == 0
    assert not marker.exists()
    assert os.environ.get("GIT_CONFIG_COUNT") is None  # set for gsme's git only
