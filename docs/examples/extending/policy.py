"""A keep rule of your own: keep every child that measured any gain.

A policy subclasses :class:`gsme.policy.Policy` (or one of gsme's rules) and implements
``keep``: one boolean per decided child. Registered under a name, ``[run] policy =
"hopeful"`` and ``gsme demo --policy hopeful`` use it.
"""

from gsme.cli import main
from gsme.policy import Policy
from gsme.registry import POLICIES
from gsme.run import Run


class Hopeful(Policy):
    """Keeps each child whose measured Δ over its parent is above 0, credited or not."""

    summary = "keeps every child that measured a gain (an example)"

    def keep(self, decisions, expected, *, keep):
        return (decisions["delta_pp"] > 0).to_numpy()


POLICIES.register("hopeful", Hopeful)
main(["demo", "--preset", "tiny", "--rounds", "2", "--policy", "hopeful", "--out", "demo",
      "--quiet"])
with Run.open("demo", read_only=True) as run:
    decisions = run.decisions()
    print(decisions[["child", "delta_pp", "decision", "kept"]].to_string(index=False))
    assert (decisions["kept"] == (decisions["delta_pp"] > 0)).all()
POLICIES.unregister("hopeful")
