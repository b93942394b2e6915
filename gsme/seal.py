"""The seal: what shows that a run's ledger and its sealed test were not changed.

Two records back each other up. The ledger's events are hash-chained (each holds the hash
of the one before it, :func:`gsme.ledger.event_hash`), and sealing writes an annotated git
tag (:data:`gsme.gitrepo.SEAL_TAG`) on the sealed harness recording the chain's head and a
digest of the test trials. :func:`problems` recomputes both and lists what differs:

* an event changed, removed or inserted (the chain breaks where it happened);
* the append-only triggers dropped;
* a seal tag whose chain head is not among the events (sealing events removed), or whose
  test-trial digest differs from the trials now stored;
* test trials in a run that was never sealed;
* a sealed run without its seal tag (a run killed between the two writes; resuming the
  run writes the tag, see :func:`tag`).

The chain needs no secret, so it shows edits made without recomputing it; what keeps
trials away from the ledger in the first place is their sandbox.
"""

from __future__ import annotations

import hashlib

from gsme.gitrepo import HarnessRepo
from gsme.ledger import GENESIS, Ledger, event_hash

__all__ = ["MISSING_TAG", "problems", "tag"]

MISSING_TAG = "the run is sealed but its repository has no seal tag"
_NO_TRIALS = hashlib.sha256().hexdigest()  # the digest of a split without trials


def problems(ledger: Ledger, repo: HarnessRepo) -> list[str]:
    """What differs between the ledger, its event chain and the seal tag (empty: none).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> from gsme.run import verify
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.close()
    >>> verify(run.path)  # problems() of the run's ledger and repository
    []
    """
    found = [] if ledger.guarded() else ["the events table's append-only triggers were removed"]
    events = ledger.chain()
    found += _broken_links(events)
    hashes = {row[6]: row for row in events}
    kinds = {row[2] for row in events}
    seal, test_trials = repo.seal(), ledger.digest("test")
    if seal is not None:
        head = seal.get("chain_head")
        if head not in hashes:
            found.append(f"the seal tag names chain head {str(head)[:12]}, which is not among "
                         "the ledger's events: sealing events were removed")
        if seal.get("test_trials") != test_trials:
            found.append("the test trials differ from those recorded in the seal tag")
    elif "sealed" in kinds:
        found.append(MISSING_TAG)
    if "sealing" not in kinds and test_trials != _NO_TRIALS:
        found.append("test trials are stored but the run was never sealed")
    return found


def tag(ledger: Ledger, repo: HarnessRepo, candidate: str) -> None:
    """Write the seal tag on ``candidate`` for the ledger as it stands (the chain's head,
    the test trials' digest); an existing tag is kept.

    Examples
    --------
    >>> import git
    >>> from gsme.experiments import simulated_run
    >>> from gsme.gitrepo import SEAL_TAG
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.close()
    >>> ledger = Ledger(run.path / "ledger.sqlite")
    >>> repo = HarnessRepo.open(run.path / "harness")
    >>> sealed = repo.seal()["candidate"]
    >>> git.Repo(run.path / "harness").delete_tag(SEAL_TAG)
    >>> problems(ledger, repo)
    ['the run is sealed but its repository has no seal tag']
    >>> tag(ledger, repo, sealed)
    >>> problems(ledger, repo)
    []
    >>> ledger.close()
    """
    head = ledger.chain()[-1][6]
    repo.tag_seal(candidate, {"candidate": candidate, "chain_head": head,
                              "test_trials": ledger.digest("test")})


def _broken_links(events: list[tuple]) -> list[str]:
    """Where the chain breaks: an event changed after it was written, or one whose
    predecessor is not the event before it (events removed or inserted)."""
    found, prev = [], GENESIS
    for id_, ts, kind, round_, payload, stored_prev, stored_hash in events:
        if stored_prev != prev:
            found.append(f"event {id_} ({kind}) does not follow the event before it: events "
                         "were removed or inserted")
        elif event_hash(stored_prev, ts, kind, round_, payload) != stored_hash:
            found.append(f"event {id_} ({kind}) was changed after it was written")
        prev = stored_hash
    return found

