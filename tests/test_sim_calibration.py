"""The simulator is calibrated: shaped like real benchmark runs, effects sized like published ones.

The real data is the Terminal-Bench leaderboard file of ``../shared/data/realdata/`` (13
systems × 80 tasks × 5 real runs; not shipped with gsme, see ``gsme.sim.shape``). Tests that
need it skip when it is absent; the rest use the published table shipped in ``data/``.
Every number from the simulator is SIMULATED.
"""

import dataclasses
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gsme import sim
from gsme.evolvers.templates import TEMPLATES
from gsme.sim import shape
from gsme.sim.model import base_onset, compile_harness
from gsme.sim.profiles import PROFILES
from gsme.sim.suite import PRESET_SPECS, build_suite

REAL_DIR = Path(os.environ.get("GSME_REALDATA",
                               Path(__file__).resolve().parents[2] / "shared/data/realdata"))
REAL_FILE = REAL_DIR / shape.TERMINAL_BENCH_FILE
PAPER_PRESETS = [p for p in sim.PRESETS if PRESET_SPECS[p].paper_benchmark is not None]


@pytest.fixture(scope="module")
def real_shape():
    if not REAL_FILE.is_file():
        pytest.skip(f"real Terminal-Bench trials not found at {REAL_FILE} (set GSME_REALDATA "
                    "to the folder holding it)")
    return shape.outcome_shape(shape.read_leaderboard_trials(REAL_FILE))


@pytest.fixture(scope="module")
def real_ranges(real_shape):
    table = shape.shape_ranges(real_shape).set_index("statistic")
    return {s: (table.at[s, "low"], table.at[s, "high"]) for s in shape.SHAPE_STATISTICS}


def violations(row, ranges) -> list[str]:
    """The statistics of one outcome-shape row outside the real [low, high] ranges."""
    return [f"{s} = {row[s]:.3f} not in [{lo:.3f}, {hi:.3f}]"
            for s, (lo, hi) in ranges.items() if not lo <= row[s] <= hi]


def test_the_real_file_is_bimodal_and_the_stored_ranges_are_computed_from_it(real_shape,
                                                                              real_ranges):
    assert len(real_shape) == 13
    assert (real_shape["n_tasks"] == 80).all() and (real_shape["n_runs"] == 5).all()
    assert np.allclose(real_shape[["never", "always", "borderline"]].sum(axis=1), 1.0)
    assert real_shape["borderline"].mean() < 0.3 < real_shape["never"].mean()
    for s, (lo, mean, hi) in shape.TERMINAL_BENCH_RANGES.items():
        assert real_ranges[s] == pytest.approx((lo, hi), abs=1e-4), s
        assert real_shape[s].mean() == pytest.approx(mean, abs=1e-4), s
    # independent recomputation of one system's numbers
    frame = shape.read_leaderboard_trials(REAL_FILE)
    one = frame[frame["system"] == real_shape["system"].iloc[0]]
    counts = one.groupby("task_id")["passed"].sum()
    assert real_shape["never"].iloc[0] == pytest.approx((counts == 0).mean())
    by_run = one.groupby("run")["passed"].mean() * 100
    assert real_shape["run_sd_pp"].iloc[0] == pytest.approx(by_run.std(ddof=1))


@pytest.mark.parametrize("name", sim.PRESETS)
def test_every_preset_baseline_over_5_runs_lies_in_the_real_ranges(name, real_ranges):
    agent = sim.preset(name)
    row = shape.outcome_shape(shape.baseline_runs(agent, runs=5, run_seed=0)).iloc[0]
    print(f"SIMULATED {name}: " + ", ".join(f"{s} {row[s]:.3f}" for s in real_ranges))
    assert not violations(row, real_ranges)
    # the expected run-to-run sd (exact, from the true rates), sized to 80 tasks, too
    p = np.concatenate([agent.true_rates({}, s)["rate"] for s in ("train", "test")])
    expected = 100 * np.sqrt((p * (1 - p)).mean() / shape.REFERENCE_TASKS)
    lo, hi = real_ranges["run_sd_80_pp"]
    assert lo <= expected <= hi


def test_the_shape_check_rejects_the_old_unimodal_suites(real_ranges):
    # the suites before calibration: no task out of reach, narrow difficulty (tb2: sd 1.6)
    spec = dataclasses.replace(PRESET_SPECS["tb2"], difficulty_mean=0.2, difficulty_sd=1.6,
                               out_of_reach=0.0)
    suite = build_suite(spec, suite_seed=0)
    onset = base_onset(suite, PROFILES[spec.profile])
    p = compile_harness([], suite, onset, lambda expr: np.ones(len(onset), bool)).pass_prob
    passed = np.random.default_rng(0).random((5, len(p))) < p
    trials = pd.DataFrame({"system": "old", "task_id": np.tile(np.arange(len(p)), 5),
                           "run": np.repeat(np.arange(1, 6), len(p)), "passed": passed.ravel()})
    row = shape.outcome_shape(trials).iloc[0]
    assert row["borderline"] > real_ranges["borderline"][1]
    assert any(v.startswith("borderline") for v in violations(row, real_ranges))


def test_the_targeted_fixes_cover_every_failure_mode():
    assert set(shape.TARGETED_FIX) == set(sim.WHYS)


@pytest.mark.parametrize("name", PAPER_PRESETS)
def test_a_preset_targeted_fix_sits_in_the_band_of_the_published_train_delta(name):
    effects = shape.targeted_effects(name)
    published = shape.published_train_delta()[name]
    mean = effects["true_train_delta_pp"].mean()
    low, high = shape.EFFECT_BAND
    print(f"SIMULATED {name}: targeted fix {effects['mechanism'].mode().iloc[0]} "
          f"{mean:+.1f} pp over suite seeds {shape.EFFECT_SUITE_SEEDS} "
          f"(per seed {effects['true_train_delta_pp'].round(1).tolist()}); "
          f"published {published:+.1f} pp; ratio {mean / published:.2f}")
    assert low * published <= mean <= high * published
    assert (effects["true_test_delta_pp"] > 0).all()  # a real fix generalises


def test_the_published_deltas_are_the_shipped_table():
    published = shape.published_train_delta()
    assert published.to_dict() == {"tb2": 6.3, "livecode": 15.8, "omni-math": 10.1,
                                   "browsecomp-plus": 15.8, "gdpval": 8.4, "appworld": 17.8,
                                   "swe-bench": 13.9}


def test_the_dominant_pathology_follows_the_profile():
    # the pathology-to-patch matching law: the fix that works is the one for the dominant
    # pathology of the model, shared across families
    dominant = {name: shape.targeted_effects(name, suite_seeds=[0])["why"].iloc[0]
                for name in ("livecode", "omni-math", "gdpval", "appworld", "swe-bench")}
    assert dominant == {"livecode": "thinking-runaway", "omni-math": "thinking-runaway",
                        "gdpval": "careless-submit", "appworld": "careless-submit",
                        "swe-bench": "careless-submit"}
    for profile in ("qwen-careless", "gemini-careless"):
        row = shape.targeted_effects("appworld", suite_seeds=[0], profile=profile).iloc[0]
        assert row["mechanism"] == "submit-verify" and row["true_train_delta_pp"] > 8
    runaway = shape.targeted_effects("appworld", suite_seeds=[0], profile="qwen-runaway")
    assert runaway["mechanism"].iloc[0] == "runaway-recovery"


def test_out_of_reach_tasks_never_pass_and_no_fix_moves_them():
    agent = sim.preset("swe-bench")
    gap = agent.suite.out_of_reach
    assert gap.sum() == round(PRESET_SPECS["swe-bench"].out_of_reach * len(gap))
    fix = shape.single_patch("submit-verify", "careless-submit")
    for split in ("train", "test"):
        mask = (agent.tasks()["split"] == split).to_numpy()
        base = agent.true_rates({}, split)["rate"].to_numpy()
        fixed = agent.true_rates(fix, split)["rate"].to_numpy()
        assert (base[gap[mask]] == 0).all() and (fixed[gap[mask]] == 0).all()
        assert (fixed[~gap[mask]] >= base[~gap[mask]]).all()
    # their failures still carry a pathology, shown in the transcript
    from gsme.resources import SEED_HARNESS

    task = agent.tasks()[gap].iloc[0]
    trials = [agent.run(SEED_HARNESS, task, repeat=r, attempt=0, run_seed=1) for r in range(20)]
    assert not any(t.passed for t in trials if t.infra_ok)
    assert all(t.pathology in sim.WHYS for t in trials if t.infra_ok)


def test_the_calibration_table_is_labelled_and_agrees_with_the_checks():
    table = shape.calibration(["tiny", "appworld"], effect_seeds=[0])
    assert table["preset"].tolist() == ["tiny", "appworld"]
    assert all(c.startswith(("sim_", "real_", "preset", "profile", "n_tasks", "dominant",
                             "targeted", "published", "effect")) or c.endswith("_ok")
               for c in table.columns)
    assert table[[f"{s}_ok" for s in shape.SHAPE_STATISTICS]].all().all()
    assert pd.isna(table["effect_ok"].iloc[0]) and bool(table["effect_ok"].iloc[1])


@pytest.mark.parametrize("name", sim.PRESETS)
def test_the_ineffective_mix_has_a_mean_effect_of_about_zero(name):
    agent = sim.preset(name, mix="ineffective")
    assert agent.name.endswith("/ineffective")
    effects = shape.proposal_effects(agent, TEMPLATES)
    test = effects["true_test_delta_pp"]
    print(f"SIMULATED {agent.name}: mean true test effect {test.mean():+.2f} pp over "
          f"{len(test)} proposals; {(test > 0).sum()} help, {(test < 0).sum()} hurt")
    assert abs(test.mean()) <= 0.5  # "about 0": see gsme.sim.catalogue.MIXES
    assert (effects.loc[effects["kind"] == "cosmetic", "true_test_delta_pp"] == 0).all()
    calibrated = shape.proposal_effects(sim.preset(name), TEMPLATES)["true_test_delta_pp"]
    assert calibrated.mean() > test.mean() + 0.5
    # the same baseline as the calibrated agent; only what patches do changes
    assert agent.true_rates({}, "train").equals(sim.preset(name).true_rates({}, "train"))


def test_the_mixes_order_from_kind_to_harmful_and_share_one_baseline():
    means, hurt, useless, targeted = {}, {}, {}, {}
    for mix in [m for m in sim.MIXES if m != "null"]:
        effects = pd.concat([shape.proposal_effects(sim.preset(p, suite_seed=s, mix=mix), TEMPLATES)
                             for p in ("tb2", "appworld") for s in (0, 1)])
        test = effects["true_test_delta_pp"]
        means[mix], hurt[mix], useless[mix] = test.mean(), (test < 0).mean(), (test <= 0).mean()
        targeted[mix] = effects.loc[effects["kind"] == "targeted", "true_test_delta_pp"].mean()
        assert sim.preset("tb2", mix=mix).true_rates({}, "train").equals(
            sim.preset("tb2").true_rates({}, "train"))
    print("SIMULATED mean true effect per mix:", {m: round(v, 2) for m, v in means.items()})
    assert means["calibrated"] > means["weak"] > means["ineffective"] > means["harmful"]
    assert abs(means["weak"]) < 0.5 and means["harmful"] < -0.5
    assert useless["harmful"] >= 0.8 and hurt["harmful"] >= 0.5  # nine in ten do not help
    assert targeted["published"] > targeted["calibrated"]  # larger wins ...
    assert hurt["published"] > hurt["calibrated"]  # ... and more proposals that hurt


def test_in_the_null_mix_no_proposal_does_anything():
    for name in ("tb2", "appworld"):
        effects = shape.proposal_effects(sim.preset(name, mix="null"), TEMPLATES)
        assert (effects[["true_train_delta_pp", "true_test_delta_pp"]] == 0).all().all()


def test_in_the_ineffective_mix_the_targeted_fix_is_weak_and_may_hurt():
    rows = pd.concat([shape.targeted_effects(name, mix="ineffective")
                      for name in sim.PRESETS])
    effect = rows["true_train_delta_pp"]
    print(f"SIMULATED ineffective mix: the dominant pathology's targeted fix "
          f"{effect.mean():+.2f} pp on average; helps in {(effect > 0).sum()} of {len(rows)} "
          f"preset × suite-seed cases, hurts in {(effect < 0).sum()}")
    assert (effect.abs() < 1.0).all()
    assert abs(effect.mean()) < 0.5
    assert 0.2 <= (effect > 0).mean() <= 0.8


def test_the_published_mix_sizes_the_dominant_fix_within_published_harness_changes():
    # real same-model harness changes: +4 to +25 pp (see gsme.sim.catalogue.MIXES)
    for name in ("tb2", "appworld", "swe-bench"):
        effect = shape.targeted_effects(name, mix="published")["true_train_delta_pp"].mean()
        assert 4.0 <= effect <= 25.0, (name, effect)


def test_the_mix_is_a_config_key():
    from gsme.plugins import build_agent

    agent = build_agent({"kind": "sim", "preset": "tb2", "mix": "ineffective"})
    assert agent.name == "simulated:tb2/balanced/ineffective"
    import pickle

    assert pickle.loads(pickle.dumps(agent)).name == agent.name
    with pytest.raises(Exception, match="mix must be one of"):
        build_agent({"kind": "sim", "preset": "tb2", "mix": "nope"})
