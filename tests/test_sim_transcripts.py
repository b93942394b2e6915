"""Simulated transcripts: signatures, ambiguity share, and the task statement."""

import numpy as np

from gsme.sim import transcripts
from gsme.sim.profiles import WHYS


def test_every_failure_mode_has_a_signature_that_varies():
    for why in WHYS:
        variants = {transcripts.signature(why, u, 50_000) for u in np.linspace(0, 0.99, 12)}
        assert len(variants) >= 2, why


def test_a_runaway_signature_is_long_and_repetitive():
    text = transcripts.signature("thinking-runaway", 0.5, 64_000)
    assert len(text) > 1000 and "64,000 tokens" in text
    assert text.count("Let me redo it.") >= 20 or text.count("double-check") >= 20 \
        or text.count("reconsider") >= 20


def test_the_shares_of_ambiguous_transcripts_are_as_documented():
    rng = np.random.default_rng(0)
    shown, blank = [], []
    for u_amb, u_var in rng.random((4000, 2)):
        text = transcripts.render("task", "careless-submit", (), u_amb, u_var, 1000.0)
        shown.append("without running the tests" in text or "no need to run the checks" in text
                     or "tests were not executed" in text)
        blank.append(text.endswith("submit()\ngrader: fail (expected output did not match)"))
    assert abs(np.mean(shown) - (1 - transcripts.AMBIGUOUS)) < 0.02
    assert abs(np.mean(blank) - transcripts.BLANK) < 0.015


def test_a_transcript_shows_the_task_and_the_fired_beacons():
    text = transcripts.render("Fix the build", None, ("b1", "b2"), 0.5, 0.5, 10.0)
    assert text.startswith("task: Fix the build")
    assert "[harness] b1 fired" in text and "[harness] b2 fired" in text
    assert text.endswith("grader: pass")
