"""A sealed run cannot be quietly reopened or rescored, and the directory lock cannot be
turned against gsme: what an attacker with the run directory in reach would try."""

import errno
import fcntl
import itertools
import json
import os
import sqlite3
import subprocess
import warnings
from io import BytesIO

import git
import pytest
from faultkit import cli, one_line_error
from git.index import IndexFile
from git.index.typ import BaseIndexEntry
from gitdb import IStream

from gsme import evolve, gitrepo, measure, sim
from gsme.run import Run, verify


def _sql(run_dir, *statements):
    db = sqlite3.connect(run_dir / Run.LEDGER)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


_UNGUARD = ("DROP TRIGGER events_no_update", "DROP TRIGGER events_no_delete")
_REGUARD = tuple(
    f"CREATE TRIGGER events_no_{verb.lower()} BEFORE {verb} ON events "
    "BEGIN SELECT RAISE(ABORT, 'events are append-only'); END" for verb in ("UPDATE", "DELETE"))


def _untag(run_dir):
    subprocess.run(["git", "-C", str(run_dir / Run.REPO), "tag", "-d", gitrepo.SEAL_TAG],
                   check=True, capture_output=True)


def test_an_untouched_sealed_run_verifies(finished, capsys):
    assert cli(capsys, "verify", finished)[:2] == (0, "ok\n")
    with Run.open(finished, read_only=True) as run:
        repo = gitrepo.HarnessRepo.open(finished / Run.REPO)
        tag = repo.seal()
        assert tag["candidate"] == run.sealed_result["candidate"].iloc[-1]
        commit = run.candidates().set_index("candidate")["commit"]
        assert tag["commit"] == commit[tag["candidate"]]
        assert tag["baseline"] == commit["baseline"]
    # the sealing event, anchored outside the ledger before the first test trial
    db = sqlite3.connect(finished / Run.LEDGER)
    (sealing,) = db.execute("SELECT hash FROM events WHERE kind = 'sealing'").fetchone()
    db.close()
    anchor = json.loads((finished / "sealing.json").read_text())
    assert anchor["chain_head"] == sealing == repo.seal(tag="gsme/sealing")["chain_head"]
    assert anchor["commit"] == tag["commit"]


def test_reopening_a_seal_by_deleting_its_events_is_detected_and_refused(fresh, capsys):
    # the attack: drop the triggers, delete the sealing events, put the triggers back
    _sql(fresh, *_UNGUARD, "DELETE FROM events WHERE kind IN ('sealing', 'sealed')", *_REGUARD)
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3
    assert "sealing events were removed" in out
    for command in ("resume", "status", "report"):
        code, _, err = cli(capsys, command, fresh)
        assert code == 2
        assert "shows tampering" in one_line_error(err)
    assert verify(fresh)  # nothing was written meanwhile


def test_removing_the_tag_as_well_still_shows_the_test_trials(fresh, capsys):
    _sql(fresh, *_UNGUARD, "DELETE FROM events WHERE kind IN ('sealing', 'sealed')", *_REGUARD)
    _untag(fresh)
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3
    assert "test trials are stored but the run was never sealed" in out
    code, _, err = cli(capsys, "resume", fresh)
    assert code == 2 and "shows tampering" in one_line_error(err)


def test_rescoring_the_sealed_test_trials_is_detected(fresh, capsys):
    _sql(fresh, "UPDATE trials SET passed = 1 WHERE split = 'test'")
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3 and "test trials differ from those recorded in the seal tag" in out


def test_changing_an_event_or_dropping_the_triggers_is_detected(fresh, capsys):
    _sql(fresh, *_UNGUARD)
    assert cli(capsys, "verify", fresh)[1] == (
        "the events table's append-only triggers were removed\n")
    _sql(fresh, "UPDATE events SET payload = '{\"parent\": \"c0002\"}' "
                "WHERE kind = 'round_started'", *_REGUARD)
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3 and "(round_started) was changed after it was written" in out


def test_an_event_slipped_into_the_chain_is_detected(fresh, capsys):
    _sql(fresh, "INSERT INTO events (ts, kind, round, payload, prev, hash) VALUES "
                "('2026-01-01 00:00:00', 'round_done', 1, '{}', 'x', 'y')")
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3 and "(round_done) does not follow the event before it" in out


def test_a_run_killed_between_sealing_and_tagging_gets_its_tag_on_resume(fresh, capsys):
    _untag(fresh)
    code, out, _ = cli(capsys, "verify", fresh)
    assert (code, out) == (3, "the run is sealed but its repository has no seal tag\n")
    assert cli(capsys, "status", fresh)[0] == 0  # reading is allowed
    assert cli(capsys, "resume", fresh, "--quiet")[0] == 0
    assert cli(capsys, "verify", fresh)[:2] == (0, "ok\n")


def test_a_symlinked_lock_is_refused_and_its_target_untouched(fresh, tmp_path, capsys):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (fresh / Run.LOCK).unlink(missing_ok=True)
    (fresh / Run.LOCK).symlink_to(victim)
    code, _, err = cli(capsys, "resume", fresh)
    assert code == 2 and "it is a symlink" in one_line_error(err)
    assert victim.read_text() == "precious"


def test_a_fifo_as_the_lock_is_refused_with_its_reason(fresh, capsys):
    (fresh / Run.LOCK).unlink(missing_ok=True)
    os.mkfifo(fresh / Run.LOCK)
    code, _, err = cli(capsys, "resume", fresh)
    assert code == 2 and "gsme.lock is not a regular file" in one_line_error(err)


def test_a_file_system_without_locks_is_one_line(fresh, capsys, monkeypatch):
    def no_locks(*_):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

    monkeypatch.setattr(fcntl, "flock", no_locks)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the lock's error comes first, alone
        code, _, err = cli(capsys, "resume", fresh)
    assert code == 2
    assert "No locks available" in one_line_error(err)


def test_verify_of_something_else_is_one_line(tmp_path, capsys):
    code, _, err = cli(capsys, "verify", tmp_path)
    assert code == 2 and "not a gsme run directory" in one_line_error(err)


def test_the_chain_links_every_event_to_the_one_before(finished):
    db = sqlite3.connect(finished / Run.LEDGER)
    rows = db.execute("SELECT prev, hash FROM events ORDER BY id").fetchall()
    db.close()
    assert len(rows) > 4 and rows[0][0] == "0" * 64
    assert all(later[0] == earlier[1] for earlier, later in itertools.pairwise(rows))
    assert len({h for _, h in rows}) == len(rows)


# -- issue 28, item 4: seal bypasses that need no hash recomputed --------------------------

def _edit_meta(run_dir, key, change):
    db = sqlite3.connect(run_dir / Run.LEDGER)
    value = json.loads(db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()[0])
    db.execute("UPDATE meta SET value = ? WHERE key = ?", (json.dumps(change(value)), key))
    db.commit()
    db.close()


def _lower_the_bar(config):
    return {**config, "gate": {**config["gate"], "z_crit": 1.5}}


def _recategorise_a_test_task(tasks):
    table = json.loads(tasks)
    row = next(r for r in table["data"] if r[1] == "test")
    row[2] = "other"
    return json.dumps(table)


_EDITS = {"config": _lower_the_bar, "schedule": lambda s: {**s, "rounds": 9},
          "evolver": lambda e: {**e, "name": "someone-else"},
          "tasks": _recategorise_a_test_task}


@pytest.mark.parametrize("key", list(_EDITS))
def test_editing_a_stored_setting_is_detected_and_refused(fresh, capsys, key):
    code, out, _ = cli(capsys, "report", fresh, "--json")
    z = json.loads(out)["sealed_z"]
    assert 1.5 < z < 1.96  # so the config edit below turns the sealed decision into a credit
    _edit_meta(fresh, key, _EDITS[key])
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3
    assert f"the ledger's {key if key != 'tasks' else 'test split'}" in out
    assert "differs from what was committed when the run was created" in out
    for command in ("report", "resume"):
        code, _, err = cli(capsys, command, fresh)
        assert code == 2 and "shows tampering" in one_line_error(err)


def _killed_while_sealing(path, monkeypatch):
    """A run killed after its sealing began and before a test trial was stored."""
    import gsme.measure as measure_module

    with Run.create(path, agent=sim.preset("tiny"), schedule={"rounds": 0},
                    agent_spec={"kind": "sim", "preset": "tiny"},
                    evolver_spec={"kind": "rule"}) as run:
        evolve.cold_start(run, progress=False)
        with monkeypatch.context() as patched:
            patched.setattr(measure_module.scoring, "execute", _die)
            with pytest.raises(KeyboardInterrupt):
                measure.finalize(run, progress=False)
        assert run.sealed and run.trials(split="test").empty
    return path


def _die(*_, **__):
    raise KeyboardInterrupt


def test_changing_the_agent_while_sealing_is_refused(tmp_path, capsys, monkeypatch):
    run_dir = _killed_while_sealing(tmp_path / "r", monkeypatch)
    _edit_meta(run_dir, "agent", lambda a: {**a, "spec": {**a["spec"], "infra_fault_rate": 0.5}})
    code, out, _ = cli(capsys, "verify", run_dir)
    assert (code, out) == (3, "the agent differs from the one the sealing began with\n")
    code, _, err = cli(capsys, "resume", run_dir, "--quiet")
    assert code == 2 and "the agent differs" in one_line_error(err)


def test_an_agent_a_grown_suite_brought_while_sealing_is_not_tampering(tmp_path, capsys,
                                                                       monkeypatch):
    run_dir = _killed_while_sealing(tmp_path / "r", monkeypatch)
    with Run.open(run_dir) as run:
        grown = run.tasks("train").head(1).assign(task_id="tiny-new")
        run.add_tasks(grown, agent_spec={**run.agent_spec, "infra_fault_rate": 0.0})
    assert cli(capsys, "verify", run_dir)[:2] == (0, "ok\n")


def test_rescored_test_trials_are_never_sealed_again_when_the_tag_is_gone(fresh, capsys):
    _sql(fresh, "UPDATE trials SET passed = 1 - passed WHERE split = 'test'")
    _untag(fresh)
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3
    assert "the test trials differ from those recorded when the run was sealed" in out
    code, _, err = cli(capsys, "resume", fresh, "--quiet")
    assert code == 2 and "test trials differ" in one_line_error(err)
    assert gitrepo.HarnessRepo.open(fresh / Run.REPO).seal() is None  # no fresh tag over them


def _drop_the_seal(run_dir):
    """The attack: the events from sealing on, the test trials and the seal tag, gone."""
    _sql(run_dir, *_UNGUARD,
         "DELETE FROM events WHERE id >= (SELECT min(id) FROM events WHERE kind = 'sealing')",
         "DELETE FROM trials WHERE split = 'test'", *_REGUARD)
    _untag(run_dir)


_ALSO = {"nothing else": lambda d: None,
         "the events' sequence": lambda d: _sql(
             d, "UPDATE sqlite_sequence SET seq = (SELECT max(id) FROM events) "
                "WHERE name = 'events'"),
         "the sealing tag": lambda d: subprocess.run(
             ["git", "-C", str(d / Run.REPO), "tag", "-d", "gsme/sealing"], check=False,
             capture_output=True),
         "the anchor file": lambda d: (d / "sealing.json").unlink(missing_ok=True)}


@pytest.mark.parametrize("also", list(_ALSO))
def test_deleting_the_seal_with_its_test_trials_does_not_reopen_the_run(fresh, capsys, also):
    _drop_the_seal(fresh)
    _ALSO[also](fresh)
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3 and "events were removed" in out
    code, _, err = cli(capsys, "resume", fresh, "--quiet")
    assert code == 2 and "shows tampering" in one_line_error(err)
    db = sqlite3.connect(fresh / Run.LEDGER)
    assert db.execute("SELECT count(*) FROM trials WHERE split = 'test'").fetchone() == (0,)
    db.close()  # the test split was not scored a second time


def test_a_forger_who_removes_every_copy_of_the_seal_is_not_detected(fresh, capsys):
    """The limit, pinned (README): with the ledger's tail, its sequence, both tags and the
    anchor file all removed, nothing is left to compare with."""
    _drop_the_seal(fresh)
    for remove in _ALSO.values():
        remove(fresh)
    assert cli(capsys, "verify", fresh)[:2] == (0, "ok\n")


@pytest.mark.parametrize("whose", ["sealed", "baseline"])
def test_rewriting_a_sealed_branch_under_its_tag_is_detected(fresh, capsys, whose):
    repo = git.Repo(fresh / Run.REPO)
    name = (gitrepo.HarnessRepo.open(fresh / Run.REPO).seal()["candidate"]
            if whose == "sealed" else "baseline")
    old = repo.commit(f"refs/heads/gsme/{name}")
    index = IndexFile.from_tree(repo, old.tree)
    data = b"# rewritten after the seal\n"
    blob = repo.odb.store(IStream("blob", len(data), BytesIO(data)))
    index.add([BaseIndexEntry((0o100644, blob.binsha, 0, "config/rewritten.toml"))], write=False)
    new = git.Commit.create_from_tree(repo, index.write_tree(), old.message,
                                      parent_commits=old.parents, head=False)
    repo.git.update_ref(f"refs/heads/gsme/{name}", new.hexsha)  # the tags stay where they were
    code, out, _ = cli(capsys, "verify", fresh)
    assert code == 3
    assert f"the branch of '{name}' points at {new.hexsha[:12]}" in out
    assert "the sealed harness was rewritten" in out
    code, _, err = cli(capsys, "report", fresh)
    assert code == 2 and "shows tampering" in one_line_error(err)


def test_a_run_killed_before_its_seal_was_anchored_is_anchored_on_resume(tmp_path, capsys,
                                                                         monkeypatch):
    from gsme import seal

    with monkeypatch.context() as patched:
        patched.setattr(seal, "_anchor", _die)
        run_dir = _killed_while_sealing(tmp_path / "r", monkeypatch)
    assert not (run_dir / seal.ANCHOR).exists()
    code, out, _ = cli(capsys, "verify", run_dir)
    assert (code, out) == (3, seal.MISSING_ANCHOR + "\n")
    assert cli(capsys, "status", run_dir)[0] == 0  # reading is allowed
    assert cli(capsys, "resume", run_dir, "--quiet")[0] == 0
    assert cli(capsys, "verify", run_dir)[:2] == (0, "ok\n")
    assert (run_dir / seal.ANCHOR).is_file()


def test_a_reader_racing_the_seal_never_takes_it_for_tampering(tmp_path):
    """A run sealed while a reader reads it (here: just after the reader read the event
    chain) is read again, not taken for a tag naming an event the chain lacks."""
    from gsme import seal
    from gsme.gitrepo import HarnessRepo
    from gsme.ledger import Ledger

    with simulated_run_unsealed(tmp_path) as run:
        path = run.path
    ledger = Ledger(path / Run.LEDGER, read_only=True)
    chain = ledger.chain

    def sealed_meanwhile():
        events = chain()  # read before the seal; the tags are read after it
        with Run.open(path) as writer:
            measure.finalize(writer)
        return events

    ledger.chain = sealed_meanwhile
    try:
        found = seal.problems(ledger, HarnessRepo.open(path / Run.REPO))
    finally:
        ledger.close()
    assert found == [], found
    assert verify(path) == []


def simulated_run_unsealed(root):
    from gsme.experiments import simulated_run

    return simulated_run("tiny", root=root, seed=3, rounds=1, finalize=False)
