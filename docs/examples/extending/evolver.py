"""An evolver of your own: it blames every failure on careless submits and proposes one
runtime middleware that makes the agent run the tests before it submits.

An evolver subclasses :class:`gsme.evolvers.Evolver`: ``diagnose(failures, ...)`` names
each failing train trial's where × why, ``propose(diagnoses, *, harness, n, ...)`` returns
up to ``n`` :class:`gsme.patches.Patch` objects, each checked by
:func:`gsme.patches.validate_patch` before it is committed. Registered under a name,
``[evolver] kind = "blame"`` builds it. It never sees a test task, and never credits
anything: the gates do.
"""

from pathlib import Path

from gsme.cli import main
from gsme.evolvers import Evolver
from gsme.patches import FileChange, Patch
from gsme.registry import EVOLVERS

MIDDLEWARE = 'name = "submit-verify"\nbeacon = "verify-first"\n'


class Blame(Evolver):
    """Every failure is a careless submit, fixed in the runtime lever."""

    name = "blame"

    def diagnose(self, failures, *, harness=None, vocabulary=None, log=None):
        return failures[["candidate", "task_id", "repeat"]].assign(
            where="runtime", why="careless-submit", evidence="submitted untested",
            confidence=0.5)

    def propose(self, diagnoses, *, harness, archive=None, vocabulary=None, n,
                history=None, log=None):
        if "runtime/submit-verify.toml" in harness:
            return []  # already there: nothing left to propose
        return [Patch(id="verify-first", where="runtime", why="careless-submit",
                      mechanism="submit-verify", beacon="verify-first",
                      rationale="run the tests before submitting",
                      changes=(FileChange("runtime/submit-verify.toml", MIDDLEWARE),))][:n]


EVOLVERS.register("blame", Blame)
Path("blame.toml").write_text("""
[run]
dir = "runs/blame"
rounds = 2
children_per_round = 1

[agent]
kind = "sim"
preset = "tiny"

[evolver]
kind = "blame"
""")
main(["run", "blame.toml", "--quiet"])
EVOLVERS.unregister("blame")
