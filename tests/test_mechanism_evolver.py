"""The mechanism evolver: exactly the named patches, for controlled experiments."""

import pytest

from gsme.evolvers.mechanism import MechanismEvolver, mechanism_patch
from gsme.patches import harness_files
from gsme.resources import SEED_HARNESS

SEED = harness_files(SEED_HARNESS)



def test_mechanism_patch_applies_the_mechanisms_template():
    off = mechanism_patch("thinking-off", SEED)
    assert (off.id, off.where, off.why, off.beacon) == (
        "thinking-off", "config", "thinking-runaway", "thinking-off")
    assert [c.new for c in off.changes] == ["thinking_budget = 0"]
    budget = mechanism_patch("token-budget-16x", SEED, env_gate="hard")
    assert budget.env_gate == "hard"
    assert budget.changes[0].new == f"thinking_budget = {16 * 8192}"
    recovery = mechanism_patch("runaway-recovery", SEED)
    assert recovery.where == "runtime" and 'beacon = "runaway-recovery"' in recovery.changes[0].new


def test_mechanism_patch_says_what_is_wrong():
    with pytest.raises(ValueError, match="no template; known: .*submit-verify"):
        mechanism_patch("make-it-better", SEED)
    with pytest.raises(ValueError, match="pass why="):
        mechanism_patch("answer-self-check", SEED)  # a fallback only, under no failure mode
    assert mechanism_patch("answer-self-check", SEED, why="looping").why == "looping"
    assert mechanism_patch("polite-tone", SEED).why == "careless-submit"  # first listed
    assert mechanism_patch("polite-tone", SEED, why="looping").why == "looping"
    with pytest.raises(ValueError, match="at least one"):
        MechanismEvolver([])
