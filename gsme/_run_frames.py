"""What a run answers by name: its frames, events and stored settings, read from its ledger
and git repository. :class:`RunFrames` is the reading half of :class:`gsme.run.Run`, which
opens the run, records the loop's steps and holds what these methods read (``path``,
``agent``, ``config``, ``schedule``, the ledger, the repository and the tasks).
"""

from __future__ import annotations

import functools
import html

import pandas as pd

from gsme import archive as archive_lib
from gsme import comparisons, pairing, schema, scoring
from gsme._run_dir import check_split, frame_from_json
from gsme.schema import BASELINE

__all__ = ["RunFrames"]


class RunFrames:
    """The questions a run answers (the base of :class:`gsme.run.Run`; not made alone)."""

    def tasks(self, split: str | None = None) -> pd.DataFrame:
        """The run's tasks (``task_id, split`` and features), fixed when it was created."""
        if split is None:
            return self._tasks.copy()
        check_split(split)
        return self._tasks[self._tasks["split"] == split].reset_index(drop=True)

    def trials(self, *, split: str | None = None, candidate: str | None = None) -> pd.DataFrame:
        """Trials in the ledger (the trials frame, plus the ``round`` each was recorded in)."""
        if split is not None:
            check_split(split)
        return self._ledger.frame("trials", split=split, candidate=candidate)

    def checked_trials(self, *, split: str | None = None) -> pairing.Checked:
        """The trials of :meth:`trials`, checked against their contract
        (:class:`gsme.pairing.Checked`: every statistic takes it without checking again).
        The run checks its trials once; the rows it records afterwards are checked on
        their own (:meth:`gsme.ledger.Ledger.checked_trials`)."""
        if split is not None:
            check_split(split)
        return self._ledger.checked_trials(split=split)

    def candidates(self) -> pd.DataFrame:
        """The candidates frame (the git repository is its source of truth)."""
        return self._ledger.frame("candidates").sort_values(["round", "candidate"],
                                                            ignore_index=True)

    def decisions(self) -> pd.DataFrame:
        """Every gate decision, with the ``round`` it was made in and whether it was ``kept``."""
        return self._ledger.frame("decisions")

    def history(self) -> pd.DataFrame:
        """What the run has tried so far and how the gates judged it.

        Returns
        -------
        DataFrame
            The history frame: one row per decided mutation, ``candidate, mechanism, where,
            why, decision, delta_pp`` (recombinations add no mechanism of their own).
        """
        decided = self.decisions()
        cands = self.candidates()
        mutations = cands[(cands["kind"] == "mutation")
                          & cands["candidate"].isin(decided["child"])]
        rows = [{"candidate": cand, "mechanism": p.mechanism, "where": p.where, "why": p.why}
                for cand, commit, patch_id in zip(mutations["candidate"], mutations["commit"],
                                                  mutations["patch_id"])
                for p in self._patches_of(cand, commit) if p.id == patch_id]
        tried = pd.DataFrame(rows, columns=["candidate", "mechanism", "where", "why"],
                             dtype=object)
        out = tried.merge(decided[["child", "decision", "delta_pp"]], left_on="candidate",
                          right_on="child").drop(columns="child")
        return schema.validate(out.astype({"delta_pp": "float64"}), "history")

    def _patches_of(self, candidate: str, commit: str | None) -> list:
        """``candidate``'s recorded patches, read from git once per commit (a commit never
        changes)."""
        if not commit:
            return self._repo.patches_of(candidate)
        if commit not in self._patches_read:
            self._patches_read[commit] = self._repo.patches_of(candidate)
        return self._patches_read[commit]

    @functools.cached_property
    def _patches_read(self) -> dict[str, list]:
        """The recorded patches :meth:`_patches_of` has read, by commit id."""
        return {}

    def diagnoses(self) -> pd.DataFrame:
        """Every diagnosis the evolver made, with its ``round``."""
        return self._ledger.frame("diagnoses")

    def proposals(self) -> pd.DataFrame:
        """Every proposal (committed or refused, with the reason) by ``round``."""
        return self._ledger.frame("proposals")

    def archive(self, round: int | None = None) -> pd.DataFrame:
        """The archive after ``round`` (default: the latest snapshot)."""
        snaps = self._ledger.frame("archive")
        if round is not None:
            snaps = snaps[snaps["snapshot"] <= int(round)]
        if snaps.empty:
            return archive_lib.empty()
        latest = snaps[snaps["snapshot"] == snaps["snapshot"].max()]
        return latest.drop(columns="snapshot").reset_index(drop=True)

    def events(self, kind: str | None = None) -> pd.DataFrame:
        """The run's append-only events (``id, ts, kind, round, payload``)."""
        return self._ledger.events(kind)

    def calls(self) -> pd.DataFrame:
        """Every evolver call recorded (tokens, cost, ...), with its ``round``."""
        return self._ledger.calls()

    def comparisons(self, *, before_round: int | None = None) -> pd.DataFrame:
        """What the keep rule learns from: earlier runs' comparisons, then this run's.

        Returns
        -------
        DataFrame
            The comparisons frame (:mod:`gsme.comparisons`): the rows read from
            ``config.learn_from`` when the run was created, then this run's train decisions
            of the rounds before ``before_round`` (all rounds when None); plus ``own``
            (True for this run's rows), which the keep rule checks the history against
            (:func:`gsme.policy.expected_effects`).
        """
        past = self._learned_from
        own = self.decisions()
        if before_round is not None:
            own = own[own["round"] < before_round]
        mine = comparisons.of_run(own, signature=self.world, run=self.run_id)
        return pd.concat([past.assign(own=False), mine.assign(own=True)], ignore_index=True)

    @functools.cached_property
    def _learned_from(self) -> pd.DataFrame:
        """The comparisons read from ``config.learn_from`` when the run was created (stored
        once, never changed: read and checked once)."""
        stored = self._ledger.get("learned_from")
        return (schema.empty("comparisons") if stored is None else
                comparisons.conform(frame_from_json(stored)))

    @property
    def world(self) -> dict[str, str]:
        """The world the run measures in (:func:`gsme.comparisons.signature`), fixed when it
        was created (a run made before 0.3.0: its agent's and evolver's names only)."""
        stored = self._ledger.get("world")
        return stored or comparisons.signature_of(
            {p: "" for p in comparisons.PARTS} | {"agent": self.agent.name,
                                                  "evolver": str(self._evolver_name())})

    @property
    def run_id(self) -> str:
        """The run's id in comparisons files (made when it was created)."""
        return self._ledger.get("run_id") or self.path.name

    def _evolver_name(self) -> str | None:
        return (self._ledger.get("evolver") or {}).get("name")

    def transcript(self, ref: str) -> str:
        """The transcript stored under a trial's ``trajectory`` reference."""
        return self._ledger.transcript(ref)

    def harness(self, candidate: str) -> dict[str, str]:
        """The files of ``candidate``'s committed harness (path → text), read from git."""
        return dict(self.snapshot(candidate).files)

    def snapshot(self, candidate: str) -> scoring.Snapshot:
        """``candidate``'s committed harness as trials receive it (files and modes).

        Read from git once per commit (a commit never changes; a candidate discarded and
        made again is another commit).
        """
        commit = self._repo.commit_of(candidate)
        if commit not in self._snapshots:
            self._snapshots[commit] = scoring.Snapshot(self._repo.files(candidate),
                                                       self._repo.executables(candidate))
        return self._snapshots[commit]

    def diff(self, parent: str | None, child: str) -> str:
        """The unified diff (``git diff``) from ``parent``'s harness to ``child``'s.

        ``parent`` None diffs against the empty tree (every file of ``child`` is added).
        """
        return self._repo.diff(parent, child)

    @functools.cached_property
    def _snapshots(self) -> dict[str, scoring.Snapshot]:
        """The committed harnesses :meth:`snapshot` has read, by commit id."""
        return {}


    @property
    def sealed(self) -> bool:
        """True once sealing began: nothing may be added, the test split is being scored."""
        return not self.events("sealing").empty

    @property
    def sealed_result(self) -> pd.DataFrame | None:
        """What :func:`gsme.measure.finalize` returned, or None while the run is not (fully)
        sealed."""
        done = self.events("sealed")
        return None if done.empty else pd.DataFrame(done["payload"].iloc[0]["result"])

    def trials_spent(self) -> int:
        """Trials actually run (borrowed trials cost nothing)."""
        return self._ledger.count_trials(borrowed=False)

    def rounds_done(self) -> int:
        """How many evolution rounds are complete."""
        done = self.events("round_done")
        return 0 if done.empty else int(done["round"].max())

    @property
    def task_model(self) -> str | None:
        """The frozen task model the run was created with (None: the agent names none)."""
        return (self._ledger.get("agent") or {}).get("task_model")

    @property
    def frozen(self) -> list[str]:
        """The harness settings no candidate may change: those the agent named frozen when
        the run was created, and those it names now."""
        stored = (self._ledger.get("agent") or {}).get("frozen") or []
        return list(dict.fromkeys([*stored, *self.agent.frozen]))

    @property
    def agent_spec(self) -> dict | None:
        """The spec :meth:`open` rebuilds the agent from (None: built in Python)."""
        return (self._ledger.get("agent") or {}).get("spec")

    @property
    def executor_spec(self) -> dict | None:
        """The ``[executor]`` spec the run was started with (None: the default executor)."""
        return (self._ledger.get("executor") or {}).get("spec")


    @property
    def reads(self) -> dict[str, int]:
        """How many times this process read each ledger table's rows from the file
        (:attr:`gsme.ledger.Ledger.reads`; trials this process wrote are kept, not read)."""
        return dict(self._ledger.reads)

    # -- display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        kind = "simulated " if self.agent.simulated else ""
        return (f"<gsme.Run {self.path} {kind}agent={self.agent.name!r} "
                f"rounds={self.rounds_done()} sealed={self.sealed}>")

    def _repr_html_(self) -> str:
        best = archive_lib.summary(self.archive())
        rows = {
            "directory": str(self.path),
            "agent": self.agent.name + (" (SIMULATED)" if self.agent.simulated else ""),
            "policy / gate": f"{self.config.policy} / {self.config.gate.design}",
            "rounds done": self.rounds_done(),
            "trials spent": self.trials_spent()
            if self.schedule is None or self.schedule.trial_budget is None
            else f"{self.trials_spent()} of {self.schedule.trial_budget}",
            "archive": f"{int(best['num_elites'].iloc[0])} elite(s), best "
                       f"{best['best_candidate'].iloc[0] or BASELINE}",
            "sealed": self.sealed,
        }
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                       for k, v in rows.items())
        return f"<table><caption>gsme run</caption>{body}</table>"
