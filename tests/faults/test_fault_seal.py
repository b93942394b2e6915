"""A sealed run cannot be quietly reopened or rescored, and the directory lock cannot be
turned against gsme: what an attacker with the run directory in reach would try."""

import errno
import fcntl
import itertools
import os
import sqlite3
import subprocess

from faultkit import cli, one_line_error

from gsme import gitrepo
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
        tag = gitrepo.HarnessRepo.open(finished / Run.REPO).seal()
        assert tag["candidate"] == run.sealed_result["candidate"].iloc[-1]
        commit = run.candidates().set_index("candidate")["commit"]
        assert tag["commit"] == commit[tag["candidate"]]


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
