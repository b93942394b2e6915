"""The price table, the cost of one call and the estimate of a round's cost."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from gsme.prices import FIXTURE_USAGE, PRICES, base_model, call_cost, estimate_round_cost

DATA = Path(__file__).parent / "data"
FIXTURES = {
    "task_right": "anthropic_agent/lcm_right.json",
    "task_wrong": "anthropic_agent/lcm_wrong.json",
    "task_syntax_error": "anthropic_agent/lcm_syntax_error.json",
    "evolver_diagnose": "claude_evolver/diagnose_ok.json",
    "evolver_propose": "claude_evolver/propose_ok.json",
}
PAIR = pd.DataFrame({"task_model": ["claude-haiku-4-5"], "evolver_model": ["claude-opus-4-8"]})


def test_every_price_is_complete_and_cache_writes_cost_a_quarter_more_than_input():
    for model, price in PRICES.items():
        assert base_model(model) == model
        assert price.output > price.input > price.cache_read > 0, model
        published = 1.2 if model == "claude-3-haiku" else 1.25  # $0.30 on $0.25
        assert price.cache_write == pytest.approx(published * price.input), model


@pytest.mark.parametrize("model, counts, usd", [
    ("claude-opus-4-8", (1_000_000, 100_000, 0, 2_000_000), 5 + 2.5 + 1.0),
    ("claude-opus-4-1-20250805", (0, 1_000_000), 75.0),
    ("claude-opus-4-5", (1_000_000, 0, 0, 1_000_000), 5.5),
    ("claude-haiku-4-5-20251001", (1000, 200), 0.002),
    ("claude-sonnet-4-20250514", (0, 0, 1_000_000), 3.75),
    ("claude-3-haiku-20240307", (4_000_000, 0), 1.0),
])
def test_call_cost_from_the_table_with_dated_ids_at_their_base_price(model, counts, usd):
    assert call_cost(model, *counts) == pytest.approx(usd, abs=1e-12)


def test_cost_of_unlisted_models_is_nan_not_a_neighbour_price():
    assert math.isnan(call_cost("gpt-x", 5, 5))
    assert math.isnan(call_cost("claude-opus-4-9", 5, 5))  # no prefix fallback to opus-4
    assert math.isnan(call_cost("claude-haiku-4-5-latest", 5, 5))


def test_call_cost_names_a_bad_count():
    with pytest.raises(ValueError, match="output_tokens must be a number >= 0, got -1"):
        call_cost("claude-haiku-4-5", 1, -1)
    with pytest.raises(ValueError, match="cache_read_input_tokens must be a number >= 0"):
        call_cost("claude-haiku-4-5", 1, 1, 0, float("nan"))
    with pytest.raises(TypeError, match="model must be a model id string"):
        call_cost(None, 1, 1)


def test_fixture_usage_is_the_usage_of_the_test_fixtures():
    for name, path in FIXTURES.items():
        usage = json.loads((DATA / path).read_text())["usage"]
        assert {k: v for k, v in usage.items() if v} == FIXTURE_USAGE[name], name


def test_round_estimate_by_hand():
    row = estimate_round_cost(PAIR).iloc[0]
    trial = ((530 + 412 + 412) * 1.0 + (77 + 41 + 30) * 5.0) / 3 / 1e6
    diagnose = (1520 * 5 + 410 * 25 + 3100 * 6.25) / 1e6
    propose = (900 * 5 + 1200 * 25 + 3100 * 0.5) / 1e6
    assert row["trials_per_round"] == 4 * 40 * 3 * 2 / 3 == 320
    assert row["trial_usd"] == pytest.approx(trial)
    assert row["round_evolver_usd"] == pytest.approx(diagnose + propose)
    assert row["round_usd"] == pytest.approx(320 * trial + diagnose + propose)
    assert row["cold_start_usd"] == pytest.approx(120 * trial)
    assert row["sealed_test_usd"] == pytest.approx(120 * trial)
    assert row["run_usd"] == pytest.approx(240 * trial + row["round_usd"])
    five = estimate_round_cost(PAIR, rounds=5, borrowed_share=0, children=1, recombinations=0,
                               n_train=10, n_test=5, k=2).iloc[0]
    assert five["trials_per_round"] == 20
    assert five["run_usd"] == pytest.approx(20 * trial + 5 * (20 * trial + diagnose + propose)
                                            + 20 * trial)


def test_round_estimate_keeps_pairs_and_is_nan_for_unlisted_models():
    pairs = pd.DataFrame({"task_model": ["claude-haiku-4-5", "mystery"],
                          "evolver_model": ["mystery", "claude-opus-4-8"],
                          "label": ["a", "b"]})
    out = estimate_round_cost(pairs, task_calls={"one": {"input_tokens": 10**6,
                                                         "output_tokens": 0}})
    assert out["label"].tolist() == ["a", "b"] and "trial_usd" not in pairs
    assert out["trial_usd"].iloc[0] == 1.0 and math.isnan(out["trial_usd"].iloc[1])
    assert math.isnan(out["round_evolver_usd"].iloc[0]) and out["round_evolver_usd"].iloc[1] > 0
    assert out["round_usd"].isna().all()


@pytest.mark.parametrize("kwargs, message", [
    ({"k": 0}, "k must be an integer >= 1, got 0"),
    ({"n_train": 2.5}, "n_train must be an integer >= 1"),
    ({"borrowed_share": 1.0}, r"borrowed_share must be in \[0, 1\), got 1.0"),
    ({"task_calls": {}}, "task_calls must name at least one"),
])
def test_round_estimate_names_a_bad_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        estimate_round_cost(PAIR, **kwargs)
    with pytest.raises(ValueError, match=r"missing column\(s\) \['evolver_model'\]"):
        estimate_round_cost(PAIR.drop(columns="evolver_model"))
