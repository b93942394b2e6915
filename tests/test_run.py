"""The run store: ledger, scoring without re-scoring, validity re-runs, the sealed test."""

import sqlite3

import pandas as pd
import pytest

from gsme import gates, measure, parent_trials, sim
from gsme.agents import TaskAgent, Trajectory
from gsme.patches import FileChange, Patch
from gsme.run import Run, RunError, RunLockedError, SealedError
from gsme.settings import GateConfig, RunConfig


def _patch(pid="p-verify", gate=""):
    return Patch(
        id=pid, where="runtime", why="careless-submit", mechanism="submit-verify",
        beacon=f"{pid}-fired", env_gate=gate, rationale="check before submitting",
        changes=(FileChange(f"runtime/{pid}.toml",
                            f'name = "submit-verify"\nbeacon = "{pid}-fired"\n[params]\n'),),
    )


@pytest.fixture
def run(tmp_path):
    agent = sim.preset("tiny", suite_seed=3, infra_fault_rate=0.0)
    with Run.create(tmp_path / "run", agent=agent, run_config=RunConfig(run_seed=3),
                    agent_spec={"kind": "sim", "preset": "tiny", "suite_seed": 3,
                                "infra_fault_rate": 0.0}) as made:
        yield made


def test_create_records_split_and_commitment(run):
    tasks = run.tasks()
    assert set(tasks["split"]) == {"train", "test"}
    assert "content" not in tasks.columns
    created = run.events("created")["payload"].iloc[0]
    assert len(created["test_commitment"]) == 64
    assert created["n_test"] == (tasks["split"] == "test").sum()
    assert list(run.candidates()["candidate"]) == ["baseline"]


def test_create_refuses_a_non_empty_directory(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("hi")
    with pytest.raises(RunError, match="not an empty folder"):
        Run.create(tmp_path / "x", agent=sim.preset("tiny"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x"]  # nothing staged is left


def test_open_rebuilds_the_agent_from_its_spec(run):
    run.close()
    with Run.open(run.path) as again:
        assert again.agent.name == run.agent.name
        assert again.config == run.config


def test_one_writer_at_a_time_readers_any_time(run):
    with pytest.raises(RunLockedError, match=r"in use by pid \d+"):
        Run.open(run.path)
    with Run.open(run.path, read_only=True) as reader:
        assert reader.agent.name == run.agent.name and reader.read_only
        with pytest.raises(RunError, match="read-only"):
            measure.measure(reader, "baseline", progress=False)
    run.close()
    Run.open(run.path).close()


def test_open_refuses_a_damaged_directory(tmp_path):
    (tmp_path / "junk").mkdir()
    with pytest.raises(RunError, match="not a gsme run"):
        Run.open(tmp_path / "junk")


def test_open_refuses_a_changed_test_split(run):
    run.close()
    other = sim.preset("tiny", suite_seed=4)
    with pytest.raises(RunError, match="commitment"):
        Run.open(run.path, agent=other)
    Run.open(run.path).close()  # the refused open left no lock behind


def test_score_runs_every_slot_once_and_never_rescores(run):
    trials = measure.measure(run, "baseline", progress=False)
    n_train = len(run.tasks("train"))
    assert len(trials) == n_train * 3
    spent = run.trials_spent()
    again = measure.measure(run, "baseline", progress=False)
    assert run.trials_spent() == spent
    pd.testing.assert_frame_equal(trials, again)


def test_every_trial_has_its_transcript(run):
    trials = measure.measure(run, "baseline", progress=False)
    text = run.transcript(trials["trajectory"].iloc[0])
    assert "task" in text.lower()


def test_child_borrows_parent_trials_outside_its_env_gate(run):
    measure.measure(run, "baseline", progress=False)
    child, _ = run.add_candidate(["baseline"], patch=_patch(gate='category == "python"'), round=1)
    run.mark("candidates_committed", 1, candidates=[child])
    trials = measure.measure(run, child, progress=False)
    tasks = run.tasks("train")
    python = set(tasks.loc[tasks["category"] == "python", "task_id"])
    borrowed = trials[trials["borrowed_from"].notna()]
    assert set(borrowed["task_id"]).isdisjoint(python)
    assert set(trials.loc[trials["borrowed_from"].isna(), "task_id"]) == python
    first = parent_trials.stride(run.config.gate)  # the baseline's fresh block of round 1
    base = run.trials(candidate="baseline").set_index(["task_id", "repeat"])["passed"]
    lent = borrowed.set_index(["task_id", "repeat"])["passed"]
    block = pd.MultiIndex.from_arrays([borrowed["task_id"], borrowed["repeat"] + first])
    assert (lent.to_numpy() == base.loc[block].to_numpy()).all()
    assert set(borrowed["borrowed_from"]) == {"baseline"}
    ran = run.trials()
    fresh = ran[(ran["candidate"] == "baseline") & (ran["repeat"] >= first)]
    assert set(fresh["task_id"]) == set(tasks["task_id"])  # the block: every task, anew
    assert fresh["borrowed_from"].isna().all()
    assert run.trials_spent() == int(ran["borrowed_from"].isna().sum())


class FlakyAgent(TaskAgent):
    """Fails the environment on every first attempt of even repeats."""

    name = "flaky"

    def tasks(self):
        return pd.DataFrame({"task_id": [f"t{i}" for i in range(8)],
                             "split": ["train"] * 6 + ["test"] * 2})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        if repeat % 2 == 0 and attempt < 2:
            return Trajectory(passed=True, infra_ok=False, error="container died")
        return Trajectory(passed=task["task_id"] != "t0", transcript="ok")


def test_infra_failures_are_rerun_up_to_the_limit(tmp_path):
    run = Run.create(tmp_path / "r", agent=FlakyAgent(),
                     run_config=RunConfig(gate=GateConfig(max_reruns=2)))
    trials = measure.measure(run, "baseline", progress=False)
    even = trials[trials["repeat"] % 2 == 0]
    assert set(even["attempt"]) == {0, 1, 2}
    assert (even.loc[even["attempt"] < 2, "error"] == "container died").all()
    assert not even.loc[even["attempt"] < 2, "passed"].any()  # a fault is never a pass
    assert even.loc[even["attempt"] == 2, "infra_ok"].all()


def test_slot_still_failing_after_reruns_is_left_alone(tmp_path):
    run = Run.create(tmp_path / "r", agent=FlakyAgent(),
                     run_config=RunConfig(gate=GateConfig(max_reruns=1)))
    trials = measure.measure(run, "baseline", progress=False)
    even = trials[trials["repeat"] % 2 == 0]
    assert set(even["attempt"]) == {0, 1}
    assert not even["infra_ok"].any()
    spent = run.trials_spent()
    measure.measure(run, "baseline", progress=False)
    assert run.trials_spent() == spent


class SickAgent(FlakyAgent):
    def health_check(self):
        return False


def test_failed_health_check_stops_scoring_with_a_clear_error(tmp_path):
    from gsme.scoring import InfraError

    run = Run.create(tmp_path / "r", agent=SickAgent())
    with pytest.raises(InfraError, match="health check"):
        measure.measure(run, "baseline", progress=False)
    assert run.trials().empty


def test_test_split_cannot_be_scored_during_evolution(run):
    with pytest.raises(SealedError, match="finalize"):
        measure.measure(run, "baseline", split="test", progress=False)


def test_finalize_scores_test_once_and_seals(run):
    measure.measure(run, "baseline", progress=False)
    first = measure.finalize(run, progress=False)
    test_trials = run.trials(split="test")
    assert len(test_trials) == len(run.tasks("test")) * 3
    second = measure.finalize(run, progress=False)
    pd.testing.assert_frame_equal(first, second)
    assert len(run.trials(split="test")) == len(test_trials)
    with pytest.raises(SealedError):
        measure.measure(run, "baseline", progress=False)
    with pytest.raises(SealedError):
        from gsme import evolve

        evolve.commit(run, "baseline", [_patch()], round=1)


def test_sealed_state_survives_reopening(run):
    measure.measure(run, "baseline", progress=False)
    measure.finalize(run, progress=False)
    run.close()
    with Run.open(run.path) as again:
        assert again.sealed and again.sealed_result is not None
        with pytest.raises(SealedError):
            measure.measure(again, "baseline", progress=False)


def test_ledger_is_in_wal_mode(run):
    mode = sqlite3.connect(run.path / Run.LEDGER).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_run_with_a_custom_agent_reopens_without_it(tmp_path):
    with Run.create(tmp_path / "r", agent=FlakyAgent()) as run:
        scored = len(measure.measure(run, "baseline", progress=False))
        child, _ = run.add_candidate(["baseline"], patch=_patch(), round=1)
        run.mark("candidates_committed", 1, candidates=[child])
    with Run.open(tmp_path / "r") as again:
        assert again.agent.name == "flaky" and len(again.trials()) == scored
        with pytest.raises(RunError, match="reopen with Run.open"):
            measure.measure(again, child, progress=False)
    with Run.open(tmp_path / "r", agent=FlakyAgent()) as more:
        assert len(measure.measure(more, child, progress=False)) > 0


def test_gates_with_the_run_config_reproduce_its_decisions(run):
    from gsme import evolve

    evolve.cold_start(run, progress=False)
    made = [run.add_candidate(["baseline"], patch=_patch(pid=f"p{i}", gate=gate), round=1)[0]
            for i, gate in enumerate(['category == "python"', ""])]
    run.mark("candidates_committed", 1, candidates=made)
    cands = run.candidates().query("candidate in @made").reset_index(drop=True)
    measure.measure(run, made, progress=False, round=1)
    decided = evolve.credit(run, cands, round=1)
    again = gates.credit(run.trials(split="train"), cands, gate=run.config.gate)
    kept = ["kept", "expected_delta_pp"]
    pd.testing.assert_frame_equal(again, decided.drop(columns=kept))
    pd.testing.assert_frame_equal(run.decisions().drop(columns=["round", *kept]), again)


def _scored(run, candidate="baseline", repeats=(5,), **columns):
    """Trials of ``candidate`` on every train task at new ``repeats`` (not yet recorded)."""
    tasks = run.tasks("train")["task_id"]
    rows = pd.DataFrame([{"candidate": candidate, "task_id": t, "split": "train",
                          "repeat": r, "passed": False, "score": 0.25}
                         for t in tasks for r in repeats])
    return rows.assign(**columns)


def test_recorded_trials_keep_their_graded_scores(run):
    run.record("trials", _scored(run), round=0)
    stored = run.trials(split="train")
    assert stored["score"].tolist() == [0.25] * len(stored)
    assert stored["passed"].dtype == bool and not stored["passed"].any()


@pytest.mark.parametrize("change,message", [
    ({"passed": "yes"}, "passed"),
    ({"score": 1.5}, "score"),
    ({"candidate": "c9999"}, "unknown candidate(s) ['c9999']"),
    ({"split": "dev"}, "split"),
    ({"task_id": "no-such-task"}, "'no-such-task' on 'train' (the run has it not at all)"),
])
def test_recording_trials_that_break_the_contract_or_name_nothing_known_is_refused(
        run, change, message):
    with pytest.raises((ValueError, RunError)) as caught:  # FrameError or RunError
        run.record("trials", _scored(run).head(2).assign(**change).head(1), round=0)
    assert message in str(caught.value)
    assert run.trials().empty


def test_recording_a_train_task_as_a_test_trial_is_refused(run):
    task = run.tasks("train")["task_id"][0]
    rows = pd.DataFrame([{"candidate": "baseline", "task_id": task, "split": "test",
                          "repeat": 0, "passed": True}])
    with pytest.raises(RunError, match=rf"'{task}' on 'test' \(the run has it on 'train'\)"):
        run.record("trials", rows, round=0)


def test_a_recorded_trial_is_never_replaced(run):
    run.record("trials", _scored(run), round=0)
    again = _scored(run, repeats=(5, 6)).assign(score=1.0)
    with pytest.raises(RunError, match=r"trial\(s\) already recorded .*baseline/"):
        run.record("trials", again, round=0)
    stored = run.trials()
    assert len(stored) == len(run.tasks("train")) and (stored["score"] == 0.25).all()


def test_test_trials_are_refused_before_the_seal(run):
    test = run.tasks("test")["task_id"]
    rows = pd.DataFrame({"candidate": "baseline", "task_id": test, "split": "test",
                         "repeat": 0, "passed": True})
    with pytest.raises(RunError, match="recorded only by the sealed test"):
        run.record("trials", rows, round=0)
    assert run.trials().empty and not run.sealed
