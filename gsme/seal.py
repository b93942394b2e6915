"""The seal: what shows that a run's ledger and its sealed test were not changed.

Records that back each other up, each covering the stored inputs of the sealed decision:

* the ledger's events are hash-chained (each holds the hash of the one before it,
  :func:`gsme.ledger.event_hash`), and every event is written durably
  (``synchronous=FULL``), so nothing recorded after an event, in git or in a file, can be
  ahead of the chain after a power loss;
* the run's creation event commits the settings it decides with (:func:`commitment`:
  digests of the config with the gate's settings, the schedule, the evolver, the
  comparisons learned from and the test split's task rows);
* sealing begins with an event recording the harness being sealed, its commit and the
  baseline's and a digest of the agent (:func:`begin`); before the first test trial that
  event's hash is copied outside the ledger, to the annotated tag
  :data:`gsme.gitrepo.SEALING_TAG` and to the file :data:`ANCHOR` beside the ledger: from
  then on a seal is due, and deleting the chain's tail shows;
* sealing ends with an event recording the result and a digest of the test trials, then
  the annotated tag :data:`gsme.gitrepo.SEAL_TAG` on the sealed harness recording the
  chain's head, that digest and the baseline's commit (:func:`finish`).

:func:`problems` recomputes them all and lists what differs: an event changed, removed
(anywhere, the end included) or inserted; the append-only triggers dropped; a committed
setting edited; an anchor or a seal tag naming an event the ledger lacks (sealing events
removed); test trials that differ from the digest recorded when the run was sealed, or
stored in a run that never began sealing; the agent changed while sealing; a sealed
harness or baseline whose branch, tag or ledger row names another commit than sealing
recorded. What a run killed between two of these writes leaves (:data:`MISSING_TAG`,
:data:`MISSING_ANCHOR`) is written by :func:`repair` from the chain's own records.

The chain needs no secret: it shows edits made without recomputing hashes. A forger who
rewrites the ledger, its sequence, both tags and the anchor file together is not detected;
what keeps trials from the ledger at all is their sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from gsme.gitrepo import SEAL_TAG, SEALING_TAG, HarnessRepo, RepoError
from gsme.ledger import GENESIS, Ledger, event_hash
from gsme.schema import BASELINE

__all__ = ["ANCHOR", "MISSING_ANCHOR", "MISSING_TAG", "REPAIRABLE", "begin", "commitment",
           "finish", "problems", "repair"]

ANCHOR = "sealing.json"
"""The file beside the ledger holding a copy of the sealing event's hash (see above)."""
MISSING_TAG = "the run is sealed but its repository has no seal tag"
MISSING_ANCHOR = ("sealing began but its anchors are not all written (a run killed between "
                  "the two; no test trial is stored yet)")
REPAIRABLE = frozenset({MISSING_TAG, MISSING_ANCHOR})
"""The problems :func:`repair` writes away (a reader may read such a run meanwhile)."""
_NO_TRIALS = hashlib.sha256().hexdigest()  # the digest of a split without trials
_COMMITTED = {"config": "config (gate and keep settings)", "schedule": "schedule",
              "evolver": "evolver", "learned_from": "comparisons learned from",
              "test_tasks": "test split's task rows"}
"""What the creation event commits (:func:`commitment`), as its problems name it."""


def commitment(ledger: Ledger) -> dict[str, str]:
    """Digests of the stored settings a run decides with, which never change after it is
    created; its creation event records them and :func:`problems` compares.

    Examples
    --------
    >>> ledger = Ledger(Path("ledger.sqlite"), create=True)
    >>> ledger.put("config", {"gate": {"z_crit": 1.96}})
    >>> before = commitment(ledger)
    >>> sorted(before)
    ['config', 'evolver', 'learned_from', 'schedule', 'test_tasks']
    >>> ledger.put("config", {"gate": {"z_crit": 1.5}})
    >>> commitment(ledger)["config"] == before["config"]
    False
    >>> ledger.close()
    """
    digests = {key: _digest(ledger.get(key)) for key in ("config", "schedule", "evolver",
                                                         "learned_from")}
    return {**digests, "test_tasks": _digest(_test_rows(ledger.get("tasks")))}


def begin(ledger: Ledger, repo: HarnessRepo, candidate: str) -> None:
    """Record that sealing ``candidate`` begins (the ``sealing`` event: the candidate, its
    commit, the baseline's and a digest of the agent), then anchor that event outside the
    ledger (:data:`gsme.gitrepo.SEALING_TAG`, :data:`ANCHOR`). Call it before the first
    test trial is scored.

    Examples
    --------
    >>> from gsme import sim
    >>> from gsme.run import Run
    >>> run = Run.create("run", agent=sim.preset("tiny"))
    >>> run.mark("sealing", candidate="baseline")  # calls begin()
    'baseline'
    >>> sorted(run.events("sealing")["payload"].iloc[0])
    ['agent', 'baseline', 'candidate', 'commit']
    >>> (run.path / ANCHOR).is_file()
    True
    >>> run.close()
    """
    ledger.event("sealing", None, candidate=candidate, commit=repo.commit_of(candidate),
                 baseline=repo.commit_of(BASELINE), agent=_digest(_agent_spec(ledger)))
    _anchor(ledger, repo)


def finish(ledger: Ledger, repo: HarnessRepo, result: list[dict]) -> None:
    """Record the sealed result (the ``sealed`` event, with a digest of the test trials),
    then write the seal tag :data:`gsme.gitrepo.SEAL_TAG` on the sealed harness.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1)  # finalize() calls finish()
    >>> sorted(run.events("sealed")["payload"].iloc[0])
    ['candidate', 'result', 'test_trials']
    >>> run.close()
    """
    sealing = _first(ledger.chain(), "sealing")
    ledger.event("sealed", None, candidate=sealing.payload["candidate"], result=result,
                 test_trials=ledger.digest("test"))
    _tag(ledger, repo)


def problems(ledger: Ledger, repo: HarnessRepo) -> list[str]:
    """What differs between the ledger, its event chain, the seal's anchors and tags and
    the git branches it recorded (empty: none).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> from gsme.run import verify
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.close()
    >>> verify(run.path)  # problems() of the run's ledger and repository
    []
    """
    # What sealing writes outside the ledger is read before and after the ledger: a writer
    # records each event before the anchor or tag naming it, so when both reads agree the
    # ledger read between them cannot lack an event an anchor or tag names; when a seal
    # went on meanwhile they differ, and the reading is done again.
    for _ in range(_READS):
        outside = _outside(ledger, repo)
        found = _found(ledger, repo, outside)
        if _outside(ledger, repo) == outside:
            break
    return found


_READS = 5
"""How often :func:`problems` reads again while a seal goes on beside it."""


def _outside(ledger: Ledger, repo: HarnessRepo) -> dict:
    """What sealing writes outside the ledger: the sealing tag, the anchor, the seal tag."""
    return {"sealing tag": repo.seal(tag=SEALING_TAG), "anchor": _read_anchor(ledger),
            "seal tag": repo.seal()}


def _found(ledger: Ledger, repo: HarnessRepo, outside: dict) -> list[str]:
    """:func:`problems`, with what sealing wrote outside the ledger already read."""
    events = ledger.chain()
    found = [] if ledger.guarded() else ["the events table's append-only triggers were removed"]
    found += _broken_links(events)
    last = events[-1][0] if events else 0
    if ledger.event_sequence() > last:
        found.append(f"the events table gave ids up to {ledger.event_sequence()} but its last "
                     f"event is {last}: events were removed from its end")
    created = _first(events, "created")
    promised = {} if created is None else created.payload.get("settings") or {}
    held = commitment(ledger)
    found += [f"the ledger's {_COMMITTED.get(key, key)} differs from what was committed when "
              "the run was created" for key in promised if held.get(key) != promised[key]]
    return found + _seal_problems(ledger, repo, events, outside)


def repair(ledger: Ledger, repo: HarnessRepo) -> bool:
    """Write what a run killed while sealing left unwritten (:data:`MISSING_ANCHOR`,
    :data:`MISSING_TAG`) from the chain's own records, when that is all :func:`problems`
    finds; return whether it did. Anything else is evidence and stays as it is.

    Examples
    --------
    >>> import git
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1)
    >>> run.close()
    >>> ledger = Ledger(run.path / "ledger.sqlite")
    >>> repo = HarnessRepo.open(run.path / "harness")
    >>> git.Repo(run.path / "harness").delete_tag(SEAL_TAG)
    >>> problems(ledger, repo)
    ['the run is sealed but its repository has no seal tag']
    >>> repair(ledger, repo), problems(ledger, repo)
    (True, [])
    >>> ledger.close()
    """
    found = problems(ledger, repo)
    if not found or not set(found) <= REPAIRABLE:
        return False
    if MISSING_ANCHOR in found:
        _anchor(ledger, repo)
    if MISSING_TAG in found:
        _tag(ledger, repo)
    return True


class _Event:
    """One stored event: its hash and its payload (a dict)."""

    def __init__(self, row: tuple):
        self.hash = row[6]
        try:
            payload = json.loads(row[4])
        except (TypeError, json.JSONDecodeError):
            payload = {}
        self.payload = payload if isinstance(payload, dict) else {}


def _first(events: list[tuple], kind: str) -> _Event | None:
    row = next((row for row in events if row[2] == kind), None)
    return None if row is None else _Event(row)


def _agent_spec(ledger: Ledger) -> dict | None:
    return (ledger.get("agent") or {}).get("spec")


def _agents_since(events: list[tuple], sealing: _Event, held: str) -> set[str]:
    """Digests of the agent specs the run may hold while sealing: the one sealing began
    with (``held`` for a seal begun before it was recorded) and any the chain records a
    grown suite brought since (``tasks_added``)."""
    since = [_Event(row) for row in events[[row[6] for row in events].index(sealing.hash):]
             if row[2] == "tasks_added"]
    return {sealing.payload.get("agent", held)} | {
        _digest(e.payload["agent_spec"]) for e in since
        if e.payload.get("agent_spec") is not None}


def _seal_problems(ledger: Ledger, repo: HarnessRepo, events: list[tuple],
                   outside: dict) -> list[str]:
    """The seal's part of :func:`problems` (``outside``: the sealing tag, the anchor and
    the seal tag, read before ``events``)."""
    sealing, sealed = _first(events, "sealing"), _first(events, "sealed")
    test_trials = ledger.digest("test")
    anchors = {f"the tag {SEALING_TAG}": outside["sealing tag"], ANCHOR: outside["anchor"]}
    found = []
    for where, record in anchors.items():
        if record is not None and (sealing is None or record.get("chain_head") != sealing.hash):
            found.append(f"{where} says sealing began at event "
                         f"{str(record.get('chain_head'))[:12]}, which is not the ledger's "
                         "sealing event: events were removed")
    tag = outside["seal tag"]
    if tag is not None:
        if sealed is None or tag.get("chain_head") != sealed.hash:
            found.append(f"the seal tag names chain head {str(tag.get('chain_head'))[:12]}, "
                         "which is not the ledger's sealed event: sealing events were removed")
        if tag.get("test_trials") != test_trials:
            found.append("the test trials differ from those recorded in the seal tag")
    elif sealed is not None:
        found.append(MISSING_TAG)
    if sealing is None:
        if test_trials != _NO_TRIALS:
            found.append("test trials are stored but the run was never sealed")
        return found
    gone = [where for where, record in anchors.items() if record is None]
    if gone and "commit" in sealing.payload:  # a seal begun before anchors has no commit
        found.append(MISSING_ANCHOR if test_trials == _NO_TRIALS else
                     f"test trials are stored but the anchor written before the first of them "
                     f"({' and '.join(gone)}) is gone")
    if sealed is not None and sealed.payload.get("test_trials", test_trials) != test_trials:
        found.append("the test trials differ from those recorded when the run was sealed")
    agent = _digest(_agent_spec(ledger))
    if sealed is None and agent not in _agents_since(events, sealing, agent):
        found.append("the agent differs from the one the sealing began with")
    return found + _rewritten(ledger, repo, sealing, tag)


def _rewritten(ledger: Ledger, repo: HarnessRepo, sealing: _Event,
               tag: dict | None) -> list[str]:
    """Where the sealed harness's or the baseline's branch, the seal tag and the ledger's
    candidates table disagree with the commits sealing recorded."""
    tag = tag or {}
    rows = ledger.frame("candidates")
    row = dict(zip(rows["candidate"], rows["commit"]))
    candidate = sealing.payload.get("candidate")
    claims = {candidate: {"sealing": sealing.payload.get("commit"),
                          f"the tag {SEAL_TAG}": tag.get("commit"),
                          "the ledger's candidates table": row.get(candidate)},
              BASELINE: {"sealing": sealing.payload.get("baseline"),
                         f"the tag {SEAL_TAG}": tag.get("baseline"),
                         "the ledger's candidates table": row.get(BASELINE)}}
    found = []
    for name, said in claims.items():
        try:
            branch = repo.commit_of(name)
        except RepoError:
            branch = "nothing"
        found += [f"the branch of {name!r} points at {branch[:12]} but {where} recorded "
                  f"{commit[:12]}: the sealed harness was rewritten"
                  for where, commit in said.items() if commit is not None and commit != branch]
    return found


def _anchor(ledger: Ledger, repo: HarnessRepo) -> None:
    """Copy the sealing event's hash to the tag :data:`SEALING_TAG` and the file
    :data:`ANCHOR` (each written once)."""
    sealing = _first(ledger.chain(), "sealing")
    record = {key: sealing.payload.get(key) for key in ("candidate", "commit", "baseline")}
    record["chain_head"] = sealing.hash
    repo.tag_seal(record["candidate"], record, tag=SEALING_TAG)
    path = ledger.path.with_name(ANCHOR)
    if _read_anchor(ledger) is None:
        fd, staged = tempfile.mkstemp(prefix=f".{ANCHOR}.", dir=path.parent)
        with os.fdopen(fd, "w") as out:
            json.dump(record, out, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(staged, path)


def _tag(ledger: Ledger, repo: HarnessRepo) -> None:
    """Write the seal tag from the ``sealed`` event (an existing one is kept)."""
    events = ledger.chain()
    sealing, sealed = _first(events, "sealing"), _first(events, "sealed")
    candidate = sealing.payload["candidate"]
    repo.tag_seal(candidate, {"candidate": candidate, "chain_head": sealed.hash,
                              "test_trials": ledger.digest("test"),
                              "baseline": sealing.payload.get("baseline")})


def _read_anchor(ledger: Ledger) -> dict | None:
    """The record of the file :data:`ANCHOR` (a damaged one reads as an empty record), or
    None without one."""
    try:
        record = json.loads(ledger.path.with_name(ANCHOR).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _digest(value) -> str:
    """SHA-256 over ``value`` as canonical JSON (a whole float counts as its integer, so a
    column pandas widened to float keeps its digest)."""
    return hashlib.sha256(json.dumps(_canonical(value), sort_keys=True).encode()).hexdigest()


def _canonical(value):
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _test_rows(stored) -> list[dict]:
    """The test split's rows (every column) of the stored tasks table, by task id."""
    try:
        table = json.loads(stored)
        rows = [dict(zip(table["columns"], row)) for row in table["data"]]
    except (TypeError, ValueError, KeyError):
        return []
    return sorted((r for r in rows if r.get("split") == "test"),
                  key=lambda r: str(r.get("task_id")))


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
