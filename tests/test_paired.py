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
        slots.candidates.to_numpy()[slots.candidate], slots.tasks.to_numpy()[slots.task],
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
    for field in ("candidate", "split", "task", "repeat", "attempts", "valid", "passed", "source"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert list(a.candidates) == list(b.candidates) and b.candidates.dtype == object


def _same_slots(a: pairing.Slots, b: pairing.Slots) -> None:
    for field in ("candidates", "splits", "tasks", "sources"):
        assert list(getattr(a, field)) == list(getattr(b, field)), field
    for field in ("candidate", "split", "task", "repeat", "attempts", "last_attempt", "valid",
                  "passed", "activated", "source", "row"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("text", ["object", "str"])
def test_rows_of_a_checked_frame_are_what_checking_those_rows_gives(seed, text):
    trials = _random_trials(seed)
    if text == "str":
        trials = trials.astype({c: "str" for c in ("candidate", "task_id", "split")})
    checked = pairing.check(trials)
    keep = np.random.default_rng(seed).random(len(trials)) < 0.4
    before = schema.CHECKS["trials"]
    kept = checked.rows(keep)
    assert schema.CHECKS["trials"] == before  # nothing checked again
    fresh = trials[keep].reset_index(drop=True)
    pd.testing.assert_frame_equal(kept.frame, fresh)
    _same_slots(kept.slots, pairing.checked_slots(fresh))


@pytest.mark.parametrize("seed", range(4))
def test_rows_added_to_a_checked_frame_are_checked_alone_and_give_a_fresh_checks_slots(seed):
    trials = _random_trials(seed)
    cut = len(trials) // 3
    held, added = (trials.iloc[:cut].reset_index(drop=True),
                   trials.iloc[cut:].reset_index(drop=True))
    order = np.random.default_rng(seed).permutation(len(trials))
    checked = pairing.check(held)
    before = schema.CHECKS.copy()
    grown = checked.extended(added, order)
    assert schema.CHECKS["trials"] == before["trials"]  # the whole frame is not checked
    assert schema.CHECKS["trials_added"] == before["trials_added"] + 1
    fresh = trials.take(order).reset_index(drop=True)
    pd.testing.assert_frame_equal(grown.frame, fresh)
    _same_slots(grown.slots, pairing.checked_slots(fresh))
    assert grown.slots.candidates.dtype == object


def test_an_added_row_whose_key_is_held_is_refused():
    trials = _random_trials(1)
    checked = pairing.check(trials)
    with pytest.raises(FrameError, match="trials"):
        checked.extended(trials.tail(1).assign(passed=True))


def test_a_checked_frame_is_never_checked_again_and_its_flags_stay_checked():
    trials = _random_trials(2)
    before = schema.CHECKS["trials"]
    checked = pairing.check(trials)
    assert schema.CHECKS["trials"] == before + 1
    assert pairing.check(checked) is checked and pairing.checked_slots(checked) is checked.slots
    on = np.ones(len(trials), dtype=bool)
    lit = checked.with_flags(activated=on)
    assert schema.CHECKS["trials"] == before + 1
    _same_slots(lit.slots, pairing.checked_slots(trials.assign(activated=True)))
    with pytest.raises(ValueError, match="with_flags sets only"):
        checked.with_flags(candidate=on)
    assert "score" not in checked.without_scores().frame


def _run(seed: int = 3):
    """A parent and two children scored on 30 tasks (k = 3), and their candidates."""
    rng = np.random.default_rng(seed)
    names = ["baseline", "c1", "c2"]
    trials = schema.as_trials(pd.DataFrame({
        "candidate": np.repeat(names, 90),
        "task_id": np.tile(np.repeat([f"t{i}" for i in range(30)], 3), 3),
        "split": "train", "repeat": np.tile([0, 1, 2], 90),
        "passed": rng.random(270) < 0.5, "activated": np.repeat([False, True, True], 90)}))
    candidates = pd.DataFrame({
        "candidate": names, "parents": ["", "baseline", "baseline"],
        "kind": ["baseline", "mutation", "mutation"], "where": [None, "prompt", "prompt"],
        "why": None, "patch_id": None, "beacon": None, "env_gate": None, "commit": None,
        "branch": None, "round": 0, "rationale": None})
    return trials, candidates


@pytest.mark.parametrize("call", ["credit", "compare", "paired_tasks", "candidate_rates",
                                  "pass_at_k", "looks"])
def test_a_call_chain_checks_its_trials_once(call):
    from gsme import compare, designs, gates, stats
    from gsme.settings import GateConfig

    trials, candidates = _run()
    pairs = pd.DataFrame({"child": ["c1"], "parent": ["baseline"]})
    calls = {
        "credit": lambda t: gates.credit(t, candidates, gate=GateConfig()),
        "compare": lambda t: compare.compare(t, parent="baseline", child="c1"),
        "paired_tasks": lambda t: stats.paired_tasks(t, parent="baseline", child="c1"),
        "candidate_rates": lambda t: stats.candidate_rates(t, k=3),
        "pass_at_k": lambda t: stats.pass_at_k(t, k=2),
        "looks": lambda t: designs.looks(t, pairs),
    }
    before = schema.CHECKS["trials"]
    given_frame = calls[call](trials)
    assert schema.CHECKS["trials"] - before == 1
    checked = pairing.check(trials)
    before = schema.CHECKS["trials"]
    given_checked = calls[call](checked)
    assert schema.CHECKS["trials"] == before
    pd.testing.assert_frame_equal(given_frame, given_checked)


def test_the_first_repeats_of_a_checked_frame_stay_checked():
    from gsme import stats

    trials, _ = _run()
    checked = pairing.check(trials)
    before = schema.CHECKS["trials"]
    first = stats.first_repeats(checked, k=2)
    assert isinstance(first, pairing.Checked)
    got = stats.pass_at_k(first, k=2)
    assert schema.CHECKS["trials"] == before
    pd.testing.assert_frame_equal(got, stats.pass_at_k(stats.first_repeats(trials, k=2), k=2))


def test_the_old_private_module_forwards_with_a_warning():
    from gsme import _paired
    from gsme.designs import significance

    with pytest.warns(DeprecationWarning, match="gsme.pairing.Slots"):
        assert _paired.Slots is pairing.Slots
    with pytest.warns(DeprecationWarning, match="one_look"):
        assert _paired.compare is significance.one_look
    with pytest.raises(AttributeError, match="nope"):
        _paired.nope  # noqa: B018


def test_slots_cand_is_candidate_with_a_warning_until_0_4():
    slots = pairing.checked_slots(_random_trials(0))
    with pytest.warns(DeprecationWarning, match=r"Slots\.cand is now Slots\.candidate"):
        old = slots.cand
    assert old is slots.candidate
    with pytest.raises(AttributeError):
        slots.cand = old
