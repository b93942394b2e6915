"""gsme.integrations.gepa and gepa_gate: GEPA's claim re-tested sealed, its accepts re-gated,
gsme's gate inside gepa.optimize and dspy.GEPA. Offline: gsme.integrations.gepa_demo."""

import contextlib
import io
import itertools
import json
import shutil
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

gepa = pytest.importorskip("gepa")

from gepa_loader import Loader as _Loader  # a GEPA DataLoader stand-in

from gsme import gates, schema
from gsme.importers.gepa import read_gepa
from gsme.integrations import gepa as gg
from gsme.integrations import gepa_demo as demo
from gsme.integrations import gepa_gate as gate
from gsme.settings import ConfigError, GateConfig

TRAIN, VAL = demo.make_tasks(36, prefix="r"), demo.make_tasks(12, prefix="v")
SEALED = demo.make_tasks(24, prefix="s")
IDS = {"val_ids": [t["task_id"] for t in VAL], "train_ids": [t["task_id"] for t in TRAIN]}
STORED = GateConfig(parent_trials="stored")  # what the gate inside GEPA reads


def _optimize(run_dir, **options):
    with contextlib.redirect_stdout(io.StringIO()):
        return gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=TRAIN[:12],
                             valset=VAL, reflection_lm=demo.ScriptedReflection(seed=0),
                             run_dir=str(run_dir), seed=0, **options)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("gepa") / "run"
    result = _optimize(run_dir, adapter=demo.DemoAdapter(seed=0), max_metric_calls=150)
    return read_gepa(run_dir, result=result, repo=False, **IDS)


class _Refuses:
    def evaluate(self, batch, candidate, capture_traces=False):
        raise AssertionError("nothing may run")


class _FailsFirst:
    """The first evaluate call dies as an environment would."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def evaluate(self, batch, candidate, capture_traces=False):
        self.calls += 1
        if self.calls == 1:
            raise demo.DemoInfraError("container died")
        return self.inner.evaluate(batch, candidate, capture_traces)


def test_the_retest_decides_as_the_paired_test_on_the_sealed_trials_says(run, tmp_path):
    assert run.best != "baseline"
    result = gg.retest(run, adapter=_FailsFirst(demo.DemoAdapter(seed=7)), sealed=SEALED, trainset=TRAIN, valset=VAL,
                       path=tmp_path / "rt")
    trials = result.trials
    assert (~trials["infra_ok"]).any()                         # faults happened, were re-run
    valid = trials[trials["infra_ok"]]
    assert valid.groupby(["candidate", "task_id"]).size().eq(3).all()
    assert trials.loc[~trials["infra_ok"], "score"].isna().all()   # and never scored
    sealed = result.table[result.table["measurement"] == gg.SEALED].iloc[0]
    means = valid.groupby(["task_id", "candidate"])["score"].mean().unstack()
    t = sps.ttest_rel(means[run.best], means["baseline"])
    assert sealed["z"] == pytest.approx(t.statistic)
    assert sealed["delta_pp"] == pytest.approx(100 * (means[run.best] - means["baseline"]).mean())
    changed = int((means[run.best] != means["baseline"]).sum())
    p = sps.ttest_rel(means[run.best], means["baseline"], alternative="greater").pvalue
    if changed >= GateConfig().exact_below:
        assert sealed["p_one_sided"] == pytest.approx(p)
    assert (sealed["decision"] == "credit") == (sealed["p_one_sided"] <= GateConfig().alpha)
    claim = result.table[result.table["measurement"] == gg.CLAIM].iloc[0]
    assert claim["selection_biased"] and claim["k"] == 1 and claim["n_tasks"] == len(VAL)
    assert "GEPA's val claim" in str(result) and "sealed measurement" in str(result)

    again = gg.retest(run, adapter=_Refuses(), sealed=SEALED, trainset=TRAIN, valset=VAL,
                      path=tmp_path / "rt")
    assert again.stored and again.table["z"].tolist() == pytest.approx(result.table["z"].tolist())
    with pytest.raises(ConfigError, match="scored once"):
        gg.retest(run, adapter=_Refuses(), sealed=SEALED[:20], trainset=TRAIN, valset=VAL,
                  path=tmp_path / "rt")


def test_a_sealed_split_overlapping_train_or_val_is_refused(run, tmp_path):
    with pytest.raises(ConfigError, match="disjoint"):
        gg.retest(run, adapter=_Refuses(), sealed=SEALED + VAL[:1], trainset=TRAIN, valset=VAL,
                  path=tmp_path / "x")
    assert not (tmp_path / "x").exists()


def _sign_flip_p(d):
    d = [x for x in d if x != 0]
    flips = [sum(s * x for s, x in zip(signs, d))
             for signs in itertools.product([1, -1], repeat=len(d))]
    return np.mean([f >= sum(d) - 1e-12 for f in flips]) if d else 1.0


def test_no_three_example_minibatch_accept_had_evidence(run):
    regated = gg.regate_accepts(run)
    assert len(regated) == len(run.iterations) and regated["accepted"].sum() >= 2
    for _, row in regated.iterrows():
        log = run.iterations[run.iterations["iteration"] == row["iteration"]].iloc[0]
        d = np.subtract([float(x) for x in schema.split_ids(log["scores_after"])],
                        [float(x) for x in schema.split_ids(log["scores_before"])])
        assert row["p_one_sided"] == pytest.approx(_sign_flip_p(d))
    assert (regated["p_one_sided"] >= 1 / 8).all() and not regated["evidence"].any()


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("gated") / "run"
    adapter = demo.DemoAdapter(seed=0)
    criterion = gate.GateAcceptance(adapter, TRAIN[12:], valset=VAL, path=run_dir / "gsme_gate")
    callback = gate.DecisionsCallback(criterion)
    result = _optimize(run_dir, adapter=adapter, max_metric_calls=1500,
                       acceptance_criterion=criterion, callbacks=[callback])
    return run_dir, result, criterion


def test_gepa_optimize_accepts_only_what_the_gate_credits(gated):
    run_dir, result, _criterion = gated
    decisions = pd.read_csv(run_dir / "gsme_gate" / "decisions.csv")
    assert len(decisions) >= 3
    accepted = decisions.dropna(subset=["child_index"])
    assert len(accepted) == len(result.candidates) - 1
    assert (accepted["decision"] == "credit").all()
    assert (decisions.loc[decisions["child_index"].isna(), "decision"] != "credit").all()
    log = (run_dir / "run_log.txt").read_text()
    assert "gsme gate: inconclusive" in log or "gsme gate: cull" in log


def test_the_persisted_decisions_equal_credit_on_the_persisted_trials(gated):
    run_dir, _, _criterion = gated
    stored = json.loads((run_dir / "gsme_gate" / "decisions.json").read_text())
    trials = gg.io.read_trials(run_dir / "gsme_gate" / "trials.csv")
    for record in stored:
        parent, child = record["parent"], record["child"]
        frame = pd.DataFrame({"candidate": [parent, child], "parents": ["", parent],
                              "kind": ["baseline", "mutation"], "where": [None, "prompt"],
                              "why": [None, "x"], "patch_id": [None, child],
                              "beacon": [None, child], "env_gate": None, "commit": None,
                              "branch": None, "round": np.array([0, 1]), "rationale": None})
        again = gates.credit(trials, frame, gate=STORED).iloc[0]
        assert again["decision"] == record["decision"]
        assert again["z"] == pytest.approx(record["z"], nan_ok=True)
        assert again["n_tasks"] == record["n_tasks"] == len(TRAIN) - 12


def test_a_resumed_run_replays_decisions_and_charges_them_once(gated):
    run_dir, result, criterion = gated
    keys = {gate.candidate_key(c): c for c in result.candidates}
    record = next(r for r in criterion.records if r["child"] in keys)  # a kept child
    resumed = gate.GateAcceptance(_Refuses(), TRAIN[12:], valset=VAL, path=run_dir / "gsme_gate")
    charged = []
    state = SimpleNamespace(program_candidates=result.candidates, i=5,
                            increment_evals=charged.append)
    proposal = SimpleNamespace(parent_program_ids=[record["parent_index"]],
                               candidate=keys[record["child"]],
                               subsample_scores_before=[0.0], subsample_scores_after=[1.0])
    assert resumed.should_accept(proposal, state) and resumed.should_accept(proposal, state)
    assert charged == [record["trials_run"]]          # nothing re-run, charged once
    assert resumed.reject_reason(proposal, state).startswith("gsme gate: credit")


def test_records_written_before_0_3_name_the_child_candidate_and_read_as_child(gated, tmp_path):
    run_dir, _, criterion = gated
    shutil.copytree(run_dir / "gsme_gate", tmp_path / "gsme_gate")
    stored = tmp_path / "gsme_gate" / "decisions.json"
    old = [{("candidate" if key == "child" else key): value for key, value in record.items()}
           for record in json.loads(stored.read_text())]
    stored.write_text(json.dumps(old))
    reopened = gate.GateAcceptance(_Refuses(), TRAIN[12:], valset=VAL,
                                   path=tmp_path / "gsme_gate")
    assert reopened.records == criterion.records and "candidate" not in reopened.records[0]


def test_a_gate_slice_in_the_val_set_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="val set"):
        gate.GateAcceptance(_Refuses(), TRAIN[12:] + VAL[:2], valset=VAL, path=tmp_path)


def test_the_repeat_adapter_re_runs_infrastructure_failures_and_averages(tmp_path):
    inner = _FailsFirst(demo.DemoAdapter(seed=3))
    wrapped = gate.RepeatAdapter(inner, repeats=4, max_reruns=5)
    out = wrapped.evaluate(TRAIN[:5], demo.SEED_CANDIDATE, capture_traces=True)
    assert inner.calls == 5 and out.num_metric_calls == 5 * 5
    assert all(s in np.arange(5) / 4 for s in out.scores)
    assert len(out.trajectories) == 5
    assert wrapped.inner is inner.inner is not None      # the rest is the wrapped adapter's
    broken = gate.RepeatAdapter(demo.DemoAdapter(seed=0, infra_rate=1.0), max_reruns=2)
    with pytest.raises(RuntimeError, match="failed 3 times"):
        broken.evaluate(TRAIN[:2], demo.SEED_CANDIDATE)


def test_dspy_gepa_completes_with_the_gate(tmp_path):
    dspy = pytest.importorskip("dspy")
    from dspy.teleprompt.gepa.gepa_utils import DspyAdapter

    def examples(tasks):
        return [dspy.Example(task_id=t["task_id"], question=t["question"], answer="correct")
                .with_inputs("question") for t in tasks]

    trainset, valset = examples(TRAIN), examples(VAL)
    program = demo.dspy_program()
    with dspy.context(lm=demo.dspy_task_lm(seed=0)):
        adapter = DspyAdapter(student_module=program, metric_fn=demo.dspy_metric,
                              feedback_map={}, num_threads=1)
        criterion = gate.GateAcceptance(adapter, trainset[12:], valset=valset,
                                        path=tmp_path / "gsme_gate")
        optimizer = dspy.GEPA(metric=demo.dspy_metric, max_metric_calls=800, use_merge=False,
                              instruction_proposer=demo.ScriptedReflection(seed=0).propose,
                              num_threads=1, log_dir=str(tmp_path / "run"), track_stats=True,
                              seed=0, gepa_kwargs={"acceptance_criterion": criterion})
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            optimized = optimizer.compile(program, trainset=trainset[:12], valset=valset)
    decisions = criterion.decisions()
    assert len(decisions) >= 1
    credited = int((decisions["decision"] == "credit").sum())
    assert len(optimized.detailed_results.candidates) - 1 == credited
    trials = criterion.trials
    for _, row in decisions.iterrows():
        frame = pd.DataFrame({"candidate": [row["parent"], row["child"]],
                              "parents": ["", row["parent"]], "kind": ["baseline", "mutation"],
                              "where": [None, "prompt"], "why": [None, "x"],
                              "patch_id": [None, "p"], "beacon": [None, "p"], "env_gate": None,
                              "commit": None, "branch": None, "round": np.array([0, 1]),
                              "rationale": None})
        assert gates.credit(trials, frame, gate=STORED).iloc[0]["decision"] == row["decision"]


# ------------------------------------------ issue 32: DataLoaders, resumes, a front's family


def test_data_loaders_are_read_as_their_items(run, tmp_path):
    criterion = gate.GateAcceptance(_Refuses(), _Loader(TRAIN[12:]), valset=_Loader(VAL),
                                    path=tmp_path / "g")
    assert list(criterion.items) == [t["task_id"] for t in TRAIN[12:]]
    with pytest.raises(ConfigError, match="val set"):
        gate.GateAcceptance(_Refuses(), TRAIN[12:] + VAL[:2], valset=_Loader(VAL),
                            path=tmp_path / "g")
    with pytest.raises(ConfigError, match="disjoint"):
        gg.retest(run, adapter=_Refuses(), sealed=_Loader(SEALED + VAL[:1]),
                  trainset=_Loader(TRAIN), valset=_Loader(VAL), path=tmp_path / "x")
    result = gg.retest(run, adapter=demo.DemoAdapter(seed=7), sealed=_Loader(SEALED[:6]),
                       trainset=_Loader(TRAIN), valset=_Loader(VAL), path=tmp_path / "rt", k=1)
    assert set(result.trials["task_id"]) == {t["task_id"] for t in SEALED[:6]}


def test_a_resumed_run_keeps_the_gepa_index_of_children_credited_before(tmp_path):
    run_dir = tmp_path / "run"
    for budget in (700, 1000):        # the second call resumes from GEPA's gepa_state.bin
        adapter = demo.DemoAdapter(seed=0)
        criterion = gate.GateAcceptance(adapter, TRAIN[12:], valset=VAL,
                                        path=run_dir / "gsme_gate")
        result = _optimize(run_dir, adapter=adapter, max_metric_calls=budget,
                           acceptance_criterion=criterion,
                           callbacks=[gate.DecisionsCallback(criterion)])
    decisions = pd.read_csv(run_dir / "gsme_gate" / "decisions.csv")
    credited = decisions[decisions["decision"] == "credit"]
    assert len(credited) == len(result.candidates) - 1 >= 2
    keys = [gate.candidate_key(c) for c in result.candidates]
    assert sorted(credited["child_index"].astype(int)) == list(range(1, len(keys)))
    for _, row in credited.iterrows():
        assert keys[int(row["child_index"])] == row["child"]
        assert result.parents[int(row["child_index"])][0] == row["parent_index"]


def test_a_fronts_sealed_tests_are_holm_corrected(run, tmp_path):
    from statsmodels.stats.multitest import multipletests

    result = gg.retest(run, adapter=demo.DemoAdapter(seed=7), sealed=SEALED, trainset=TRAIN,
                       valset=VAL, path=tmp_path / "rt", members="front")
    sealed = result.table[result.table["measurement"] == gg.SEALED]
    assert len(sealed) >= 3
    alpha = GateConfig().alpha
    reject, adjusted, _, _ = multipletests(sealed["p_one_sided"], alpha=alpha, method="holm")
    assert sealed["p_holm"].tolist() == pytest.approx(adjusted.tolist())
    assert ((sealed["decision"] == "credit") == reject).all()
    assert (sealed["p_holm"] >= sealed["p_one_sided"]).all()
    assert f"Holm over {len(sealed)}" in str(result)
    claims = result.table[result.table["measurement"] == gg.CLAIM]
    assert claims["p_holm"].isna().all()             # GEPA's claims are not tests
