"""The paired core's boundary: trials are checked as they are (object or pandas string
columns) and reduced to slots, each scored by its first valid attempt."""

import numpy as np
import pandas as pd
import pytest

from gsme import pairing, schema
from gsme.schema import FrameError


def _random_trials(seed: int) -> pd.DataFrame:
    """Slots with up to three attempts, infra faults, borrowed rows, shuffled."""
    rng = np.random.default_rng(seed)
    rows = {}
    for _ in range(300):
        key = (f"c{rng.integers(4)}", f"t{rng.integers(6)}", ("train", "test")[rng.integers(2)],
               int(rng.integers(3)), int(rng.integers(3)))
        rows[key] = {"passed": bool(rng.random() < 0.5), "infra_ok": bool(rng.random() < 0.6),
                     "activated": bool(rng.random() < 0.3),
                     "borrowed_from": f"c{rng.integers(6)}" if rng.random() < 0.2 else None}
    frame = pd.DataFrame([dict(zip(schema.TRIAL_KEY, k, strict=True), **v)
                          for k, v in rows.items()])
    return schema.as_trials(frame).sample(frac=1, random_state=seed).reset_index(drop=True)


def _expected(trials: pd.DataFrame) -> pd.DataFrame:
    """What each slot should say, by pandas groupby: the first valid attempt scores it."""
    ordered = trials.sort_values(["infra_ok", "attempt"], ascending=[False, True])
    first = ordered.groupby(schema.SLOT_KEY, sort=True).head(1).set_index(schema.SLOT_KEY)
    grouped = trials.groupby(schema.SLOT_KEY, sort=True)["attempt"]
    valid = first["infra_ok"]
    return pd.DataFrame({"attempts": grouped.size(), "last_attempt": grouped.max(),
                         "valid": valid, "passed": first["passed"] & valid,
                         "activated": first["activated"] & valid,
                         "source": first["borrowed_from"].fillna(
                             pd.Series(first.index.get_level_values(0), index=first.index))})


@pytest.mark.parametrize("seed", range(6))
def test_each_slot_is_scored_by_its_first_valid_attempt(seed):
    trials = _random_trials(seed)
    slots = pairing.encode_slots(pairing.checked_trials(trials))
    index = pd.MultiIndex.from_arrays([
        slots.candidates.to_numpy()[slots.cand], slots.tasks.to_numpy()[slots.task],
        slots.splits.to_numpy()[slots.split], slots.repeat], names=schema.SLOT_KEY)
    got = pd.DataFrame({"attempts": slots.attempts, "last_attempt": slots.last_attempt,
                        "valid": slots.valid, "passed": slots.passed,
                        "activated": slots.activated,
                        "source": slots.sources.to_numpy()[slots.source]}, index=index)
    expected = _expected(trials)
    got = got.loc[expected.index]  # slots come sorted by their codes, not their names
    for column in expected:
        assert got[column].tolist() == expected[column].tolist(), column


@pytest.mark.parametrize("text", ["object", "str"])
def test_checked_trials_returns_a_valid_frame_itself_and_refuses_a_repeated_key(text):
    trials = _random_trials(0)
    if text == "str":
        trials = trials.astype({c: "str" for c in ("candidate", "task_id", "split")})
    assert pairing.checked_trials(trials) is trials  # no copy, nothing converted
    twice = pd.concat([trials, trials.iloc[[5]]], ignore_index=True)
    with pytest.raises(FrameError, match="must be unique"):
        pairing.checked_trials(twice)


def test_string_columns_encode_like_object_columns():
    trials = _random_trials(1)
    arrow = trials.astype({c: "str" for c in ("candidate", "task_id", "split",
                                              "borrowed_from")})
    a, b = pairing.encode_slots(trials), pairing.encode_slots(arrow)
    for field in ("cand", "split", "task", "repeat", "attempts", "valid", "passed", "source"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert list(a.candidates) == list(b.candidates) and b.candidates.dtype == object
