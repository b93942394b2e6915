"""compare(), plan(), repeat_sd_from_aa() and the ``gsme compare`` / ``gsme plan`` commands.

The row's statistics are checked against :func:`gsme.stats.paired_test` and the other
library functions it claims to report, and the power figures against statsmodels.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower, TTestPower

from gsme import compare, designs, gates, importers, power, schema, stats
from gsme.cli import main
from gsme.settings import GateConfig

DATA = Path(__file__).parent / "data" / "importers"
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _pair(fmt: str):
    base, child = {"harbor": ("harbor/baseline-job", "harbor/child-job"),
                   "tb": ("tb/baseline", "tb/child")}[fmt]
    return DATA / base, DATA / child


def _simulated(n_tasks=30, k=3, p=(0.4, 0.6), seed=0, names=("base", "v2")):
    rng = np.random.default_rng(seed)
    size = n_tasks * k
    return pd.DataFrame({
        "candidate": np.repeat(names, size),
        "task_id": np.tile(np.repeat([f"t{i:02d}" for i in range(n_tasks)], k), 2),
        "split": "train", "repeat": np.tile(np.arange(k), 2 * n_tasks),
        "passed": rng.random(2 * size) < np.repeat(p, size)})


# ------------------------------------------------------------------------------ compare

@pytest.mark.parametrize("fmt", ["harbor", "tb"])
def test_row_matches_the_library_functions(fmt):
    trials, _ = importers.read_pair(*_pair(fmt), format=fmt)
    parent, child = trials["candidate"].unique()
    row = compare.compare(trials, parent=parent, child=child).iloc[0]
    tested = stats.paired_test(trials, parent=parent, child=child).iloc[0]
    for name in ("n_tasks", "n_dropped", "n_changed", "k", "rate_parent", "rate_child",
                 "delta_pp", "se_pp", "z", "p_one_sided", "decision"):
        assert row[name] == tested[name], name
    if tested["n_changed"] >= compare.LOGS_GATE.exact_below:  # else the exact sign-flip p
        assert row["p_one_sided"] == pytest.approx(sps.t.sf(row["z"], row["n_tasks"] - 1))
    tasks = stats.paired_tasks(trials, parent=parent, child=child, gate=compare.LOGS_GATE)
    assert 100 * tasks["diff"].mean() == pytest.approx(row["delta_pp"])
    assert (row["n_up"], row["n_down"], row["n_tied"]) == (
        (tasks["diff"] > 0).sum(), (tasks["diff"] < 0).sum(), (tasks["diff"] == 0).sum())
    assert schema.split_ids(row["tasks_up"]) == sorted(tasks.loc[tasks["diff"] > 0, "task_id"])
    assert schema.split_ids(row["tasks_down"]) == sorted(tasks.loc[tasks["diff"] < 0, "task_id"])
    infra = trials[~trials["infra_ok"]].groupby("candidate").size()
    assert (row["n_infra_parent"], row["n_infra_child"]) == (infra.get(parent, 0),
                                                              infra.get(child, 0))
    at_k = stats.pass_at_k(stats.first_repeats(trials, k=3), k=int(row["pass_k"]))
    at_k = at_k.set_index("candidate")["pass_at_k"]
    assert row["pass_at_k_parent"] == at_k[parent]
    assert row["pass_at_k_child"] == at_k[child]
    assert row["sd_pp"] == pytest.approx(tested["se_pp"] * np.sqrt(tested["n_tasks"]))
    assert row["mde_pp"] == power.mde(n_tasks=int(row["n_tasks"]), repeat_sd_pp=row["sd_pp"],
                                      k=1)


def test_pass_k_falls_to_the_repeats_both_sides_have():
    trials, _ = importers.read_pair(*_pair("tb"), format="tb")   # baseline K=2, child K≤3
    row = compare.compare(trials, parent="baseline", child="child").iloc[0]
    assert row["pass_k"] == 2 and row["k"] == 3
    assert np.isfinite(row["pass_at_k_parent"]) and np.isfinite(row["pass_at_k_child"])


def _statsmodels_power(reference: str, size: float, n: int, alpha: float) -> float:
    """Power of the one-sample test of the task differences: z or Student t."""
    if reference == "normal":
        return NormalIndPower().power(effect_size=size, nobs1=n, alpha=alpha, ratio=0)
    return TTestPower().power(effect_size=size, nobs=n, alpha=alpha)


@pytest.mark.parametrize("reference", ["normal", "t"])
def test_mde_and_power_agree_with_statsmodels(reference):
    config = GateConfig(reference=reference)
    trials = _simulated(n_tasks=40, p=(0.4, 0.55))
    row = compare.compare(trials, parent="base", child="v2", effect_pp=10, gate=config).iloc[0]
    alpha = 2 * config.alpha
    expected = _statsmodels_power(reference, row["power_effect_pp"] / row["sd_pp"], 40, alpha)
    assert row["power"] == pytest.approx(expected, rel=1e-3)
    at_mde = _statsmodels_power(reference, row["mde_pp"] / row["sd_pp"], 40, alpha)
    assert at_mde == pytest.approx(0.8, abs=1e-3)


def test_too_many_unpaired_tasks_is_invalid():
    trials = _simulated(n_tasks=20)
    half = trials[(trials["candidate"] == "base") | (trials["task_id"] < "t10")]
    row = compare.compare(half, parent="base", child="v2").iloc[0]
    assert (row["decision"], row["gate_failed"], row["n_dropped"]) == ("invalid", "validity", 10)
    assert "could not be paired" in row["reason"] or "unpaired" in row["reason"] \
        or "paired" in row["reason"]


def test_decisions_and_the_adaptive_design_go_through_the_gate():
    trials = _simulated(n_tasks=40, k=9, p=(0.3, 0.6))
    pairs = pd.DataFrame({"child": ["v2"], "parent": ["base"]})
    for design in ("fixed", "adaptive"):
        config = GateConfig(design=design)
        row = compare.compare(trials, parent="base", child="v2", gate=config).iloc[0]
        gate = gates.significance_gate(trials, pairs, gate=config).iloc[0]
        assert row["design"] == design
        assert (row["decision"], row["z"], row["looks"]) == (gate["decision"], gate["z"],
                                                             gate["looks"])
        assert row["decision"] == "credit" and row["gate_failed"] is None


def test_unknown_candidates_are_refused():
    trials = _simulated()
    with pytest.raises(schema.FrameError, match="child 'v3' has no trials"):
        compare.compare(trials, parent="base", child="v3")
    with pytest.raises(schema.FrameError, match="must differ"):
        compare.compare(trials, parent="base", child="base")


# --------------------------------------------------------------------------------- plan

@pytest.mark.parametrize("reference", ["normal", "t"])
def test_fixed_plan_is_the_power_module(reference):
    config = GateConfig(reference=reference)
    table = compare.plan(n_tasks=45, effect_pp=5, designs=["fixed"], gate=config).iloc[0]
    reach = {"effect_pp": 5, "repeat_sd_pp": 100 * 0.5 ** 0.5, "config": config}
    assert table["power"] == power.power(n_tasks=45, **reach)
    assert table["mde_pp"] == power.mde(n_tasks=45, repeat_sd_pp=100 * 0.5 ** 0.5,
                                        gate=config)
    k, n = int(table["k_needed"]), int(table["n_tasks_needed"])
    assert power.power(n_tasks=45, k=k, **reach) >= 0.8 > power.power(n_tasks=45, k=k - 1,
                                                                       **reach)
    assert power.power(n_tasks=n, k=3, **reach) >= 0.8 > power.power(n_tasks=n - 1, k=3, **reach)
    # statsmodels: tasks for 80% power of the one-sample test at d = 5 / (70.7/√3)
    size = 5 / (100 * 0.5 ** 0.5 / 3 ** 0.5)
    solved = (NormalIndPower().solve_power(effect_size=size, alpha=2 * config.alpha, power=0.8,
                                           ratio=0) if reference == "normal" else
              TTestPower().solve_power(effect_size=size, alpha=2 * config.alpha, power=0.8))
    assert n == int(np.ceil(solved))
    assert table["trials_per_side"] == 45 * 3


def test_plan_k_needed_is_nan_when_task_spread_dominates():
    row = compare.plan(n_tasks=20, effect_pp=5, task_sd_pp=40, designs=["fixed"]).iloc[0]
    assert np.isnan(row["k_needed"]) and np.isfinite(row["n_tasks_needed"])


def test_adaptive_plan_simulates_the_real_gate():
    config = GateConfig()
    row = compare.plan(n_tasks=30, effect_pp=20, designs=["adaptive"], simulations=60,
                       gate=config).iloc[0]
    assert row["method"] == "simulated"
    assert 0.3 < row["power"] <= 1
    assert 30 * config.k <= row["trials_per_side"] <= 30 * config.k_max
    assert 0 < row["mde_pp"] < 40
    null = compare.plan(n_tasks=30, effect_pp=0, designs=["adaptive"], simulations=100,
                        rng=1).iloc[0]
    assert null["power"] <= 0.12                    # false alarms stay near the 5% level


def test_simulated_decisions_are_the_gates():
    """The looks replay the plan reads agree with the gate's decisions, pair by pair."""
    config = GateConfig(design="adaptive")
    rng = np.random.default_rng(3)
    draws = (rng.random((40, 20, config.k_max, 2)), rng.standard_normal((40, 20)))
    trials, pairs = designs.adaptive._simulated_pairs(draws, 15.0, 70.0, 0.0)
    last = designs.looks(trials, pairs, gate=config).groupby(
        "child", sort=False).tail(1)
    gate = gates.significance_gate(trials, pairs, gate=config)
    assert last["decision"].tolist() == gate["decision"].tolist()


def test_repeat_sd_from_aa_recovers_the_noise():
    rng = np.random.default_rng(5)
    n, k = 1500, 3
    p = np.repeat(rng.uniform(0.2, 0.8, n), k)
    trials = pd.DataFrame({"candidate": np.repeat(["a", "a2"], n * k),
                           "task_id": np.tile(np.repeat(np.arange(n).astype(str), k), 2),
                           "split": "train", "repeat": np.tile(np.arange(k), 2 * n),
                           "passed": rng.random(2 * n * k) < np.tile(p, 2)})
    truth = 100 * np.sqrt(np.mean(2 * p * (1 - p)))
    assert compare.repeat_sd_from_aa(trials, candidate="a", rerun="a2") == pytest.approx(
        truth, rel=0.05)
    with pytest.raises(schema.FrameError, match="two or more tasks"):
        compare.repeat_sd_from_aa(trials[trials["task_id"] == "0"], candidate="a", rerun="a2")


# ---------------------------------------------------------------------------------- CLI

@pytest.mark.parametrize("fmt", ["harbor", "tb"])
def test_cli_compare_json_z_is_paired_test_z(fmt, capsys):
    base, child = _pair(fmt)
    assert main(["compare", str(base), str(child), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    trials, dropped = importers.read_pair(base, child, format=fmt)
    tested = stats.paired_test(trials, parent=row["parent"], child=row["child"]).iloc[0]
    assert row["z"] == pytest.approx(tested["z"], rel=1e-12)
    assert row["delta_pp"] == pytest.approx(tested["delta_pp"], rel=1e-12)
    assert row["decision"] == tested["decision"]
    assert row["n_not_imported"] == len(dropped)


def test_cli_compare_inspect_logs(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("inspect_logs", DATA / "inspect_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tasks = [f"t{i}" for i in range(6)]
    base = module.write_inspect_log(tmp_path / "base", {t: [i % 2 == 0, False]
                                                        for i, t in enumerate(tasks)})
    child = module.write_inspect_log(tmp_path / "child", {t: [True, i % 3 == 0]
                                                          for i, t in enumerate(tasks)},
                                     crash=("t5",))
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "child"), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    trials, _ = importers.read_pair(base.parent, child.parent)
    tested = stats.paired_test(trials, parent="base", child="child").iloc[0]
    assert (row["parent"], row["child"]) == ("base", "child")
    assert row["z"] == pytest.approx(tested["z"], rel=1e-12)
    assert row["n_infra_child"] == 2 and row["n_tasks"] == 5


def test_cli_compare_prints_the_row(capsys):
    assert main(["compare", *map(str, _pair("harbor")), "--design", "adaptive"]) == 0
    out = capsys.readouterr().out
    assert "adaptive gate" in out and "delta_pp" in out and "mde_pp" in out
    assert "p_one_sided" in out and "p_value" not in out  # the p the one-sided rule reads
    assert "moved up (" in out and "infrastructure failures, not scored" in out
    assert "1 x no verifier reward" not in out and "2 x no verifier reward" in out


def _inspect_writer():
    spec = importlib.util.spec_from_file_location("inspect_logs", DATA / "inspect_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.write_inspect_log


def _paired_t(base: dict, child: dict):
    """SciPy's paired t on per-task pass rates, the test the fixed gate claims to run."""
    tasks = sorted(base)
    return sps.ttest_rel([np.mean(child[t]) for t in tasks], [np.mean(base[t]) for t in tasks])


def test_cli_compare_scorer_threshold_and_candidate_from(tmp_path, capsys):
    write = _inspect_writer()
    tasks = [f"t{i}" for i in range(8)]
    base = {t: [i % 2 == 0, False, i % 3 == 0] for i, t in enumerate(tasks)}
    child = {t: [True, i % 3 != 0, i % 2 == 0] for i, t in enumerate(tasks)}
    write(tmp_path / "a", base, metadata={"harness": "v1"}, two_scorers=True)
    write(tmp_path / "b", child, metadata={"harness": "v2"}, two_scorers=True)
    argv = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gsme: error: ") and "several scorers" in err and "a/" in err
    assert main([*argv, "--scorer", "match", "--candidate-from", "metadata:harness"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["parent"], row["child"]) == ("v1", "v2")
    reference = _paired_t(base, child)
    assert row["z"] == pytest.approx(reference.statistic, rel=1e-12)
    assert row["n_tasks"] == 8 and row["k"] == 3
    assert main([*argv, "--scorer", "_confidence", "--threshold", "0.5"]) == 0  # 0.9 or 0.4
    assert json.loads(capsys.readouterr().out)["z"] == pytest.approx(reference.statistic)
    assert main([*argv, "--scorer", "_confidence", "--threshold", "0.3", "--on",
                 "passed"]) == 0  # all pass
    assert json.loads(capsys.readouterr().out)["delta_pp"] == 0
    assert main([*argv, "--scorer", "_confidence", "--threshold", "0.3"]) == 0  # graded
    row = json.loads(capsys.readouterr().out)  # 0.4 + 0.5 pass: the same z, half the Δ
    assert row["outcome"] == "score" and row["z"] == pytest.approx(reference.statistic)
    assert row["pass_at_k_child"] is None  # graded scores have no pass@k
    assert main([*argv, "--scorer", "match", "--candidate-from", "log"]) == 2   # one model
    assert "both are 'mockllm/model'" in capsys.readouterr().err
    write(tmp_path / "a", base, metadata={"harness": "v3"})
    assert main([*argv, "--scorer", "match", "--candidate-from", "metadata:harness"]) == 2
    err = capsys.readouterr().err
    assert "holds 2 candidates" in err and err.count("\n") == 1


def test_cli_compare_folders_of_swebench_reports(tmp_path, capsys):
    rng = np.random.default_rng(3)
    tasks = [f"repo__repo-{i}" for i in range(12)]
    outcomes = {}
    for side, p in (("base", 0.3), ("child", 0.6)):
        outcomes[side] = {t: list(rng.random(3) < p) for t in tasks}
        (tmp_path / side).mkdir()
        for run in range(3):
            report = {"resolved_ids": [t for t in tasks if outcomes[side][t][run]],
                      "unresolved_ids": [t for t in tasks if not outcomes[side][t][run]]}
            (tmp_path / side / f"{side}-model.run{run}.json").write_text(json.dumps(report))
    assert main(["compare", str(tmp_path / "base"), str(tmp_path / "child"), "--json",
                 "--candidate-from", "log"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["parent"], row["child"], row["k"]) == ("base-model", "child-model", 3)
    reference = _paired_t(outcomes["base"], outcomes["child"])
    assert row["z"] == pytest.approx(reference.statistic, rel=1e-12)
    if row["n_changed"] >= compare.LOGS_GATE.exact_below:
        assert row["p_one_sided"] == pytest.approx(reference.pvalue / 2
                                                   if reference.statistic > 0
                                                   else 1 - reference.pvalue / 2)


def test_cli_compare_harbor_reward_key_and_threshold(capsys):
    argv = ["compare", *map(str, _pair("harbor")), "--json"]
    assert main(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert main([*argv, "--scorer", "reward", "--threshold", "0.5"]) == 0   # rewards are 0/1
    assert json.loads(capsys.readouterr().out) == default


@pytest.mark.parametrize("argv", [
    ["compare", "nowhere", str(DATA / "tb" / "child")],
    ["compare", str(DATA / "tb" / "baseline"), str(DATA / "tb" / "child"), "--format", "hal"],
    ["compare", str(DATA / "tb" / "baseline"), str(DATA / "tb" / "child"), "--scorer", "x"],
    ["compare", str(DATA / "tb" / "baseline"), str(DATA / "tb" / "child"), "--threshold", "1"],
    ["compare", str(DATA / "tb" / "baseline"), str(DATA / "tb" / "child"),
     "--candidate-from", "model"],
    ["compare", str(DATA / "tb" / "child"), str(DATA / "tb" / "child"), "--candidate-from", "log"],
    ["compare", *map(str, _pair("harbor")), "--scorer", "score"],
    ["compare", *map(str, _pair("harbor")), "--threshold", "nan"],
    ["plan", "--tasks", "1", "--effect", "5"],
    ["plan", "--tasks", "20", "--effect", "5", "--power", "1.5"],
])
def test_cli_errors_are_one_line_and_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("gsme: error: ") and err.count("\n") == 1


def test_cli_plan_json_and_aa(capsys):
    assert main(["plan", "--tasks", "45", "--effect", "5", "--design", "fixed", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (fixed,) = out["designs"]
    assert fixed["power"] == pytest.approx(power.power(n_tasks=45, effect_pp=5,
                                                       repeat_sd_pp=100 * 0.5 ** 0.5))  # defaults
    assert out["repeat_sd_source"].startswith("default")
    base, child = _pair("tb")
    assert main(["plan", "--tasks", "16", "--effect", "10", "--design", "fixed",
                 "--aa", str(base), str(child)]) == 0
    text = capsys.readouterr().out
    trials, _ = importers.read_pair(base, child)
    sd = compare.repeat_sd_from_aa(trials, candidate="baseline", rerun="child")
    assert f"repeat sd {sd:.3g} pp (A/A estimate" in text and "k_needed" in text
    with pytest.raises(SystemExit):                     # --repeat-sd and --aa exclude
        main(["plan", "--tasks", "5", "--effect", "5", "--repeat-sd", "50", "--aa", "a", "b"])
