"""Mixes as data: per-kind scales, the registry, a stated mix through every door, errors."""

import dataclasses
import json
import pickle

import pandas as pd
import pytest

from gsme import config, plugins, sim
from gsme.cli import main
from gsme.evolvers.templates import TEMPLATES
from gsme.run import Run
from gsme.settings import ConfigError
from gsme.sim import shape
from gsme.sim.catalogue import CATALOGUE, MIXES, Mix, Scale, as_mix, effect_of, register_mix

# every kind scaled its own way, the rest by the mix-wide scales
MINE = Mix("mine", fix=0.5, harm=2.0, side_harm=0.01, targeted={"fix": 1.2},
           cosmetic=Scale(side_harm=0.02), overfit={"hints": 0.5, "side_harm": 0.05})
TABLE = {"name": "mine", "fix": 0.2, "targeted": {"fix": 1.5}}
NEW_WORLDS = ("rare_big", "many_small", "train_overfit", "bimodal")


@pytest.fixture
def registered():
    """``MINE`` registered for one test, then removed."""
    register_mix(MINE)
    yield MINE
    MIXES.unregister("mine")


# (mechanism, kind, factor, harm, harm_hard) computed by hand from the catalogue's listing
HAND = [
    ("submit-verify", "targeted", 1 - 1.2 * (1 - 0.3), 0.01, 0.01),
    ("verify-reminder", "weak", 1 - 0.5 * (1 - 0.85), 0.01, 0.01),
    ("recheck-loop", "harmful", 1 - 0.5 * (1 - 0.9), 2 * 0.04 + 0.01, 2 * 0.12 + 0.01),
    ("token-budget-16x", "costly", 1 - 0.5 * (1 - 0.85), 0.01, 0.01),
    ("polite-tone", "cosmetic", 1.0, 0.02, 0.02),
    ("train-task-hints", "overfit", 1 - 0.5 * (1 - 0.6), 0.05, 0.05),
    ("thinking-off", "harmful", 1 - 0.5 * (1 - 0.3), 2 * 0.05 + 0.01, min(1.0, 2 * 0.7 + 0.01)),
]


@pytest.mark.parametrize(("mechanism", "kind", "factor", "harm", "harm_hard"), HAND)
def test_each_kind_is_scaled_by_its_own_factors(mechanism, kind, factor, harm, harm_hard):
    effect = effect_of(mechanism, "looping", mix=MINE)
    assert effect.kind == kind
    assert effect.factor == pytest.approx(factor, abs=1e-12)
    assert (effect.harm, effect.harm_hard) == pytest.approx((harm, harm_hard), abs=1e-12)
    listed = CATALOGUE[mechanism]
    assert (effect.cost, effect.trigger, effect.why) == (listed.cost, listed.trigger, listed.why)


def test_an_unknown_mechanism_is_scaled_as_the_unknown_kind():
    listed = effect_of("a brand new idea", "looping")
    assert listed.kind == "unknown" and 0.9 < listed.factor < 1.0
    scaled = effect_of("a brand new idea", "looping", mix=Mix("u", unknown={"fix": 3.0}))
    assert scaled.factor == pytest.approx(1 - 3.0 * (1 - listed.factor), abs=1e-12)


def test_mix_wide_scales_are_every_kinds_default_and_cosmetic_changes_risk_nothing():
    wide = Mix("wide", fix=0.3, hints=0.7, harm=0.5, side_harm=0.004)
    assert wide.scale("weak") == Scale(0.3, 0.7, 0.5, 0.004)
    assert wide.scale("cosmetic") == Scale(0.3, 0.7, 0.5, 0.0)
    # today's scalars stated under another name make today's world
    restated = Mix("weak_again", fix=0.3, harm=0.5, side_harm=0.004)
    for mechanism in CATALOGUE:
        assert effect_of(mechanism, "x", mix=restated) == effect_of(mechanism, "x", mix="weak")


def test_every_registered_mix_round_trips_through_its_json_table():
    for name in MIXES:
        table = json.loads(json.dumps(dataclasses.asdict(MIXES[name])))
        assert as_mix(table) == MIXES[name]
    assert as_mix(dataclasses.asdict(MINE)) == MINE != Mix("mine")


def test_a_kind_left_unscaled_keeps_the_catalogues_effect():
    only_targeted = Mix("only", targeted={"fix": 2.0})
    assert effect_of("verify-reminder", "x", mix=only_targeted) is CATALOGUE["verify-reminder"]
    assert effect_of("loop-breaker", "x", mix=only_targeted).factor == 0.0  # 1 - 2 * 0.7 < 0


def test_a_per_kind_mix_acts_through_the_simulated_agent():
    agent = sim.preset("tb2", mix=Mix("strong_targeted", targeted={"fix": 1.5}))
    calibrated = sim.preset("tb2")
    weak = shape.single_patch("verify-reminder", "careless-submit")
    targeted = shape.single_patch("submit-verify", "careless-submit")
    assert agent.true_effect(weak, {}, "test") == calibrated.true_effect(weak, {}, "test")
    assert agent.true_effect(targeted, {}, "test") > calibrated.true_effect(targeted, {}, "test") + 1


def test_registry_round_trip(registered):
    assert "mine" in sim.MIXES and "mine" in list(sim.MIXES)
    assert sim.MIXES["mine"] is registered and as_mix("mine") is registered
    agent = sim.preset("tiny", mix="mine")
    assert agent.name == "simulated:tiny/qwen-careless/mine" and agent.mix == registered
    with pytest.raises(ValueError, match="a mix named 'mine' is registered already"):
        register_mix(MINE)
    replaced = register_mix({**TABLE}, replace=True)
    assert sim.MIXES["mine"] == replaced == Mix("mine", fix=0.2, targeted=Scale(fix=1.5))


def test_unregistered_the_name_is_unknown_again():
    register_mix(MINE)
    MIXES.unregister("mine")
    with pytest.raises(ValueError, match=r"mix must be one of \['calibrated', .*'bimodal'\], "
                                         r"got 'mine'"):
        sim.preset("tiny", mix="mine")


def test_a_mix_instance_through_preset_equals_the_registered_world_it_restates():
    restated = Mix("restated", fix=0.05, harm=0.25, side_harm=0.01)  # ineffective's values
    agent = sim.preset("tb2", suite_seed=1, mix=restated)
    assert agent.name == "simulated:tb2/balanced/restated" and agent.mix is restated
    mine = shape.proposal_effects(agent, TEMPLATES)
    theirs = shape.proposal_effects(sim.preset("tb2", suite_seed=1, mix="ineffective"), TEMPLATES)
    pd.testing.assert_frame_equal(mine, theirs)
    assert not mine.equals(shape.proposal_effects(sim.preset("tb2", suite_seed=1), TEMPLATES))


def test_a_stated_mix_survives_pickling_without_the_registry(registered):
    agent = sim.SimAgent("tiny", mix="mine")
    frozen = pickle.dumps(agent)
    MIXES.unregister("mine")  # a fresh worker process knows only gsme's own mixes
    try:
        thawed = pickle.loads(frozen)
    finally:
        register_mix(MINE)
    assert thawed.name == agent.name and thawed.mix == MINE
    fix = shape.single_patch("submit-verify", "careless-submit")
    assert thawed.true_effect(fix, {}, "train") == agent.true_effect(fix, {}, "train")


def _config(path, run_dir, mix: str):
    path.write_text(f'[run]\ndir = "{run_dir}"\nrounds = 1\nchildren_per_round = 2\n'
                    f'run_seed = 3\n\n[agent]\nkind = "sim"\npreset = "tiny"\nmix = {mix}\n\n'
                    f'[evolver]\nkind = "rule"\nseed = 3\n')
    return path


INLINE = '{ name = "mine", fix = 0.2, targeted = { fix = 1.5 } }'


def test_a_config_inline_table_builds_the_mix_and_resume_rebuilds_it(tmp_path):
    spec = config.load(_config(tmp_path / "a.toml", tmp_path / "a", INLINE))
    assert spec.agent["mix"] == TABLE
    with Run.create(spec.dir, agent=plugins.build_agent(spec.agent),
                    evolver=plugins.build_evolver(spec.evolver), run_config=spec.config,
                    schedule=spec.schedule, agent_spec=spec.agent, evolver_spec=spec.evolver):
        pass  # created, not started: `gsme resume` drives it from its stored spec
    assert main(["resume", str(tmp_path / "a"), "--quiet", "--json"]) == 0
    assert main(["run", str(_config(tmp_path / "b.toml", tmp_path / "b", INLINE)),
                 "--quiet", "--json"]) == 0
    with Run.open(tmp_path / "a", read_only=True) as a, \
            Run.open(tmp_path / "b", read_only=True) as b:
        assert a.agent.name == "simulated:tiny/qwen-careless/mine"
        assert a.agent.mix == as_mix(TABLE) and a.sealed
        key = ["candidate", "task_id", "repeat", "attempt"]
        cols = [*key, "passed", "infra_ok"]
        pd.testing.assert_frame_equal(a.trials()[cols].sort_values(key, ignore_index=True),
                                      b.trials()[cols].sort_values(key, ignore_index=True))


def test_a_user_defined_mix_runs_through_gsme_demo(tmp_path, capsys):
    still = tmp_path / "still.toml"  # nothing any proposal does matters: a known answer
    still.write_text('name = "still"\nfix = 0.0\nhints = 0.0\nharm = 0.0\n')
    assert main(["demo", "--preset", "tiny", "--rounds", "1", "--mix", str(still),
                 "--out", str(tmp_path / "d"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED agent (tiny, still proposals)" in out
    assert "simulated:tiny/qwen-careless/still" in out
    with Run.open(tmp_path / "d", read_only=True) as run:
        assert run.agent_spec["mix"] == {"name": "still", "fix": 0.0, "hints": 0.0, "harm": 0.0}
    table = dict(line.split(None, 1) for line in out.splitlines() if line.startswith("true_"))
    assert float(table["true_train_delta_pp"]) == 0.0
    assert float(table["true_sealed_delta_pp"]) == 0.0


def test_gsme_demo_takes_an_inline_mix_and_a_name_registered_after_import(tmp_path, capsys,
                                                                        registered):
    assert main(["demo", "--preset", "tiny", "--rounds", "1", "--mix", INLINE.replace(
        '"mine"', '"inline"'), "--out", str(tmp_path / "i"), "--quiet"]) == 0
    assert "simulated:tiny/qwen-careless/inline" in capsys.readouterr().out
    assert main(["demo", "--preset", "tiny", "--rounds", "1", "--mix", "mine",
                 "--out", str(tmp_path / "m"), "--quiet"]) == 0
    assert "simulated:tiny/qwen-careless/mine" in capsys.readouterr().out


BAD = [
    ({"name": "m", "tagreted": {"fix": 1.0}}, "mix 'm': 'tagreted' is neither a scale (fix, "
     "hints, harm, side_harm) nor a kind of mechanism (targeted, weak, harmful, costly, "
     "cosmetic, overfit, unknown)"),
    ({"name": "m", "fix": -0.5}, "mix 'm': fix must be a number ≥ 0, got -0.5"),
    ({"name": "m", "weak": {"harm": -1}}, "mix 'm': weak.harm must be a number ≥ 0, got -1"),
    ({"name": "m", "side_harm": 1.5}, "mix 'm': side_harm must be a number in [0, 1], got 1.5"),
    ({"name": "m", "targeted": {"fx": 1}}, "mix 'm': targeted.fx is not a scale; a kind's "
     "scales are fix, hints, harm, side_harm"),
    ({"name": "m", "fix": "lots"}, "mix 'm': fix must be a number ≥ 0, got 'lots'"),
    ({"fix": 0.5}, "a mix table needs a name (registered: ['calibrated',"),
    ({"name": "weak", "fix": 0.9}, "mix 'weak' is registered with other values; give yours "
     "another name"),
    ({"name": "my mix"}, "a mix's name must be an identifier, got 'my mix'"),
    ("nope", "mix must be one of ['calibrated', 'weak', 'ineffective', 'harmful', 'published', "
     "'null', 'rare_big', 'many_small', 'train_overfit', 'bimodal'], got 'nope'"),
]


@pytest.mark.parametrize(("mix", "message"), BAD)
def test_bad_mix_input_is_one_line_naming_the_field(mix, message):
    with pytest.raises(ValueError) as err:
        as_mix(mix)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    with pytest.raises(ConfigError) as err:  # the same through a config's [agent] table
        plugins.build_agent({"kind": "sim", "preset": "tiny", "mix": mix})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_mix_on_the_command_line_is_one_line(tmp_path, capsys):
    for text, message in [('{ name = "m", fix = -1 }', "fix must be a number ≥ 0"),
                          ('{ name = "m", costy = { fix = 1 } }', "'costy' is neither a scale"),
                          ("nope", "must be one of ['calibrated'"),
                          (str(tmp_path / "missing.toml"), "No such file")]:
        with pytest.raises(SystemExit) as exc:
            main(["demo", "--preset", "tiny", "--mix", text])
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.value.code == 2 and message in err[-1], err
        assert err[-1].startswith("gsme demo: error: argument --mix: ")


@pytest.fixture(scope="module")
def new_worlds():
    """Each new world's proposals, measured as gsme.sim.catalogue.MIXES says (SIMULATED)."""
    return {mix: pd.concat([shape.proposal_effects(sim.preset(p, suite_seed=s, mix=mix),
                                                   TEMPLATES)
                            for p in ("tb2", "appworld", "swe-bench") for s in range(5)])
            for mix in NEW_WORLDS}


def test_the_new_worlds_are_shaped_as_documented(new_worlds):
    rare = new_worlds["rare_big"]
    test = rare["true_test_delta_pp"]
    assert (test > 0).mean() == pytest.approx(0.23, abs=0.01)
    assert rare.loc[rare["kind"] == "targeted", "true_test_delta_pp"].min() > 0
    assert (rare.loc[rare["kind"] != "targeted", "true_test_delta_pp"] < 0).all()
    small = new_worlds["many_small"]
    acting = small.loc[~small["kind"].isin(["cosmetic", "overfit"]), "true_test_delta_pp"]
    assert (small["true_test_delta_pp"] >= 0).all()
    assert acting.median() == pytest.approx(1.0, abs=0.05)
    assert acting.between(0.5, 2.5).mean() == pytest.approx(2 / 3, abs=0.02)
    overfit = new_worlds["train_overfit"].query("kind == 'overfit'")
    assert overfit["true_train_delta_pp"].mean() > 20 and overfit["true_test_delta_pp"].max() < 0
    bimodal = new_worlds["bimodal"]["true_test_delta_pp"]
    assert (bimodal.abs() < 0.5).mean() <= 0.01
    assert (bimodal <= -3).mean() == pytest.approx(0.19, abs=0.01)
    assert (bimodal >= 3).mean() == pytest.approx(0.20, abs=0.01)


def test_every_world_keeps_the_same_baseline():
    base = sim.preset("tb2").true_rates({}, "train")
    for mix in NEW_WORLDS:
        assert sim.preset("tb2", mix=mix).true_rates({}, "train").equals(base)


def test_a_stated_mix_runs_through_simulated_run_and_reopens(tmp_path):
    from gsme import experiments
    from gsme.run import Run

    run = experiments.simulated_run("tiny", root=tmp_path, rounds=1, finalize=False,  # SIMULATED
                                    mix=Mix("stated", fix=0.5))
    try:
        assert run.path.name.startswith("tiny-qwen-careless-stated-")
        assert run.agent_spec["mix"]["fix"] == 0.5
    finally:
        run.close()
    with Run.open(run.path, read_only=True) as again:
        assert again.agent.name == run.agent.name and again.agent.name.endswith("/stated")
