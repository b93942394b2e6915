"""The evolution loop on the simulated default: determinism, fault tolerance, the sealed test."""

import pandas as pd
import pytest

from gsme import evolve, measure, sim
from gsme import policy as policies
from gsme.agents import TaskAgent, Trajectory
from gsme.evolvers.rule import RuleEvolver
from gsme.gitrepo import HarnessRepo
from gsme.run import Run
from gsme.settings import RunConfig, Schedule

KEY = ["candidate", "task_id", "split", "repeat", "attempt"]
SEED = 1
OUTCOME = KEY + ["passed", "infra_ok", "activated", "beacons"]


def _run(path, *, seed=SEED, fault=0.0, canary=None, policy="gated", evolver=None,
         budget=None):
    agent = sim.SimAgent("tiny", suite_seed=seed, infra_fault_rate=fault, test_canary=canary)
    return Run.create(path, agent=agent, evolver=evolver or RuleEvolver(seed=seed),
                      run_config=RunConfig(run_seed=seed, policy=policy),
                      schedule=Schedule(children_per_round=3, recombinations_per_round=1,
                                        trial_budget=budget))


def _evolve(run, rounds=3):
    evolve.evolve(run, rounds=rounds, progress=False)
    return run


def _outcomes(run):
    return run.trials()[OUTCOME].sort_values(KEY, ignore_index=True)


def _decisions(run):
    cols = ["child", "parent", "decision", "z", "delta_pp"]
    return run.decisions()[cols].sort_values("child", ignore_index=True)


def test_a_round_chains_every_step(tmp_path):
    run = _run(tmp_path / "r")
    result = evolve.run_round(run, children=3, recombinations=0, progress=False)
    assert result.round == 1 and result.parent == "baseline"
    assert len(result.candidates) >= 1
    assert set(result.decisions["child"]) == set(result.candidates["candidate"])
    assert set(result.decisions["decision"]) <= {"credit", "cull", "inconclusive",
                                                 "invalid", "inactive"}
    assert not run.diagnoses().empty
    notes = HarnessRepo.open(run.path / Run.REPO).notes(result.candidates["candidate"].iloc[0])
    assert notes["gate"]["decision"] in set(result.decisions["decision"])


def test_same_seed_gives_identical_runs(tmp_path):
    a = _evolve(_run(tmp_path / "a"))
    b = _evolve(_run(tmp_path / "b"))
    pd.testing.assert_frame_equal(_outcomes(a), _outcomes(b))
    pd.testing.assert_frame_equal(_decisions(a), _decisions(b))
    pd.testing.assert_frame_equal(a.archive(), b.archive())


def test_infra_faults_change_no_decision(tmp_path):
    clean = _evolve(_run(tmp_path / "clean"))
    faulty = _evolve(_run(tmp_path / "faulty", fault=0.2))
    trials = faulty.trials()
    assert (~trials["infra_ok"]).mean() > 0.1
    assert not trials.loc[~trials["infra_ok"], "passed"].any()
    pd.testing.assert_frame_equal(_decisions(clean), _decisions(faulty))
    assert (clean.decisions()["z"].abs() > 0).any()  # the comparison has teeth
    # every slot the faulty run scored holds the outcome the clean run got there
    slot = ["candidate", "task_id", "repeat"]
    valid = trials[trials["infra_ok"]].set_index(slot)["passed"]
    assert len(valid) > 0.95 * len(clean.trials())  # at 20% faults, 3 in a row are rare
    pd.testing.assert_series_equal(valid, clean.trials().set_index(slot)["passed"].loc[valid.index])


class RecordingEvolver(RuleEvolver):
    """Keeps every input the loop hands to the evolver."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.seen = []
        self.histories = []

    def diagnose(self, failures, **kwargs):
        self.seen.append(failures.to_csv())
        return super().diagnose(failures, **kwargs)

    def propose(self, diagnoses, *, harness, archive=None, vocabulary=None, n, history=None,
                log=None):
        self.seen += [diagnoses.to_csv(), archive.to_csv(), str(harness), history.to_csv()]
        self.histories.append(history)
        return super().propose(diagnoses, harness=harness, archive=archive,
                               vocabulary=vocabulary, n=n)


def test_evolver_never_sees_the_test_split(tmp_path):
    canary = "CANARY-7f3a9"
    evolver = RecordingEvolver(seed=SEED)
    run = _evolve(_run(tmp_path / "r", canary=canary, evolver=evolver), rounds=2)
    measure.finalize(run, progress=False)
    test_ids = set(run.tasks("test")["task_id"])
    seen = "\n".join(evolver.seen)
    assert evolver.seen and canary not in seen
    assert not any(f",{t}," in seen for t in test_ids)
    last = evolver.histories[-1]  # shown in round 2: round 1's mutations and their verdicts
    round_one = run.candidates().query("round == 1 and kind == 'mutation'")["candidate"]
    assert len(last) and set(last["candidate"]) == set(round_one)
    assert last["mechanism"].notna().all() and last["decision"].notna().all()
    test_refs = run.trials(split="test")["trajectory"]
    assert any(canary in run.transcript(ref) for ref in test_refs)  # the canary was planted


def test_rounds_resume_after_an_interrupted_round(tmp_path, monkeypatch):
    whole = _evolve(_run(tmp_path / "whole"), rounds=2)
    broken = _run(tmp_path / "broken")
    evolve.run_round(broken, progress=False)
    real = evolve.credit

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evolve, "credit", crash)
    with pytest.raises(KeyboardInterrupt):
        evolve.run_round(broken, progress=False)
    monkeypatch.setattr(evolve, "credit", real)
    broken.close()
    resumed = _evolve(Run.open(broken.path, agent=broken.agent, evolver=RuleEvolver(seed=SEED)),
                      rounds=2)
    pd.testing.assert_frame_equal(_outcomes(whole), _outcomes(resumed))
    pd.testing.assert_frame_equal(_decisions(whole), _decisions(resumed))


def test_trial_budget_stops_the_loop(tmp_path):
    run = _run(tmp_path / "r", budget=1)
    evolve.evolve(run, rounds=10, progress=False)
    assert evolve.next_round(run) == 1
    assert not run.events("budget_reached").empty


@pytest.mark.parametrize("policy", ["greedy", "peak"])
def test_policies_keep_children_whose_rate_rose(tmp_path, policy):
    run = _evolve(_run(tmp_path / "r", policy=policy), rounds=2)
    dec = run.decisions()
    assert (dec["kept"] == (dec["delta_pp"].fillna(0).round(9) > 0)).all()
    chosen = policies.reported(run.archive(), run.trials(split="train"),
                                          policy=policy, k=run.config.gate.k)
    if policy == "peak":
        from gsme import stats

        first = stats.first_repeats(run.trials(split="train"), k=run.config.gate.k)
        rates = stats.task_rates(first, split="train").groupby("candidate")["rate"].mean()
        assert rates[chosen] == rates.max()


def test_archive_outcomes_name_each_childs_own_decision(tmp_path):
    run = _run(tmp_path / "r")
    result = evolve.run_round(run, children=3, recombinations=0, progress=False)
    outcomes = result.outcomes.merge(result.decisions[["child", "decision", "kept"]],
                                     left_on="candidate", right_on="child")
    dropped = outcomes[~outcomes["kept"]]
    assert len(dropped)
    assert (dropped["status"] == "not_added").all()
    assert [r == f"not kept (decision {d})" for r, d
            in zip(dropped["reason"], dropped["decision"])] == [True] * len(dropped)


def test_dask_executor_gives_the_same_trials_as_threads(tmp_path):
    distributed = pytest.importorskip("distributed")
    threads = _run(tmp_path / "threads")
    measure.measure(threads, "baseline", progress=False)
    dask_run = _run(tmp_path / "dask")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        measure.measure(dask_run, "baseline", executor=client.get_executor(), progress=False)
    pd.testing.assert_frame_equal(_outcomes(threads), _outcomes(dask_run))


def test_a_process_pool_gives_the_same_trials_as_threads(tmp_path):
    from concurrent.futures import ProcessPoolExecutor

    threads = _run(tmp_path / "threads", fault=0.1)
    measure.measure(threads, "baseline", progress=False)
    procs = _run(tmp_path / "procs", fault=0.1)
    with ProcessPoolExecutor(max_workers=2) as pool:
        measure.measure(procs, "baseline", executor=pool, progress=False)
    pd.testing.assert_frame_equal(_outcomes(threads), _outcomes(procs))


class NoRuntimeAgent(sim.SimAgent):
    """A simulated agent whose runtime accepts no middleware files."""

    def check_harness(self, harness_dir):
        files = sorted(p.name for p in (harness_dir / "runtime").glob("*.toml"))
        if files:
            raise ValueError(f"unknown middleware file(s) {files}")


def test_candidates_the_agent_cannot_run_are_refused_with_their_reason(tmp_path):
    agent = NoRuntimeAgent("tiny", suite_seed=1, infra_fault_rate=0.0)
    run = Run.create(tmp_path / "r", agent=agent, evolver=RuleEvolver(seed=1),
                     run_config=RunConfig(run_seed=1))
    for _ in range(3):
        evolve.run_round(run, children=4, recombinations=0, progress=False)
    proposals = run.proposals()
    refused = proposals[~proposals["ok"]]
    assert refused["reason"].str.contains("cannot run this harness: unknown middleware").any()
    kept = run.candidates()
    assert "runtime" not in set(kept["where"].dropna())
    assert list(kept["candidate"]) == list(HarnessRepo.open(run.path / Run.REPO).candidates()
                                           ["candidate"])
    assert set(run.trials()["candidate"]) <= set(kept["candidate"])


def test_a_round_run_step_by_step_counts_like_run_round(tmp_path):
    run = _run(tmp_path / "r")
    evolve.cold_start(run, progress=False)
    parent = evolve.choose_parent(run, round=1)
    run.mark("round_started", 1, parent=parent)
    diagnosed = evolve.diagnose(run, evolve.failures(run, parent, round=1), parent=parent,
                                round=1)
    made = evolve.commit(run, parent, evolve.propose(run, parent, diagnosed, n=2, round=1),
                         round=1)
    run.mark("candidates_committed", 1, candidates=made)
    cands = run.candidates().query("candidate in @made").reset_index(drop=True)
    measure.measure(run, made, progress=False, round=1)
    decided = evolve.credit(run, cands, round=1)
    assert evolve.next_round(run) == 1
    evolve.insert(run, decided, round=1)
    assert evolve.next_round(run) == 2
    second = evolve.run_round(run, progress=False)
    assert second.round == 2 and set(second.candidates["round"]) == {2}


def test_an_unfinished_manual_round_is_named_not_discarded(tmp_path):
    from gsme.run import RunError

    run = _run(tmp_path / "r")
    evolve.cold_start(run, progress=False)
    diagnosed = evolve.diagnose(run, evolve.failures(run, "baseline", round=1),
                                parent="baseline", round=1)
    made = evolve.commit(run, "baseline", evolve.propose(run, "baseline", diagnosed, n=1,
                                                          round=1), round=1)
    measure.measure(run, made, progress=False, round=1)  # scored before the round was closed
    with pytest.raises(RunError, match="finish it with evolve.credit"):
        evolve.run_round(run, progress=False)
    assert list(run.candidates()["candidate"]) == ["baseline", *made]


def test_a_committed_manual_round_is_finished_by_run_round(tmp_path):
    run = _run(tmp_path / "r")
    evolve.cold_start(run, progress=False)
    run.mark("round_started", 1, parent="baseline")
    diagnosed = evolve.diagnose(run, evolve.failures(run, "baseline", round=1),
                                parent="baseline", round=1)
    made = evolve.commit(run, "baseline", evolve.propose(run, "baseline", diagnosed, n=2,
                                                          round=1), round=1)
    run.mark("candidates_committed", 1, candidates=made)
    result = evolve.run_round(run, progress=False)
    assert result.round == 1 and list(result.candidates["candidate"]) == made
    assert evolve.next_round(run) == 2


def test_the_learned_rule_stacks_kept_but_uncredited_children(tmp_path):
    from gsme import experiments

    with experiments.simulated_run("tb2", root=tmp_path, seed=4, rounds=3, policy="learned",
                                   finalize=False) as run:
        decided = run.decisions().set_index("child")
        cands = run.candidates()
        archive = run.archive()
    stacked = [p for parents in cands.loc[cands["kind"] == "recombination", "parents"]
               for p in parents.split(",")[1:]]
    uncredited_kept = set(decided.index[decided["kept"] & (decided["decision"] != "credit")])
    assert uncredited_kept & set(stacked)  # small gains the gate did not credit, merged
    assert (~archive["credited"]).any()  # the archive says which elites were not credited
    assert set(archive.loc[~archive["credited"], "candidate"]) <= uncredited_kept


class _PassesAll(TaskAgent):
    """An easy suite for a strong model: every trial passes."""

    name = "passes-all"

    def tasks(self):
        return pd.DataFrame({"task_id": [f"t{i}" for i in range(12)],
                             "split": ["train"] * 8 + ["test"] * 4})

    def run(self, harness_dir, task, *, repeat, attempt, run_seed):
        return Trajectory(passed=True, transcript="done")


def test_a_parent_that_fails_nothing_proposes_nothing_and_the_run_goes_on_to_its_seal(
        tmp_path):
    class Refuses(RuleEvolver):
        def diagnose(self, *args, **kwargs):  # never asked: there is nothing to diagnose
            raise AssertionError("the evolver was asked about no failure")

    run = Run.create(tmp_path / "run", agent=_PassesAll(), evolver=Refuses(),
                     schedule=Schedule(rounds=4))
    decisions = evolve.evolve(run, progress=False)
    assert decisions.empty and run.rounds_done() == 1  # one round, then it stopped
    assert evolve.failures(run, "baseline", round=2).empty
    assert len(run.candidates()) == 1
    evolve.evolve(run, progress=False)  # a resume adds no round either
    assert run.rounds_done() == 1
    assert measure.finalize(run, progress=False)["rate"].tolist() == [1.0, 1.0]
    run.close()


def test_a_graded_trial_below_full_score_is_a_failure_to_read(tmp_path):
    class Graded(_PassesAll):
        def run(self, harness_dir, task, *, repeat, attempt, run_seed):
            return Trajectory(passed=True, score=0.5 if task["task_id"] == "t0" else 1.0,
                              transcript="half" if task["task_id"] == "t0" else "done")

    run = Run.create(tmp_path / "run", agent=Graded(), evolver=RuleEvolver())
    evolve.cold_start(run, progress=False)
    failed = evolve.failures(run, "baseline", round=1)
    assert set(failed["task_id"]) == {"t0"} and set(failed["transcript"]) == {"half"}
    run.close()
