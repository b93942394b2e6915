"""The patch: what an evolver proposes and what a candidate commit applies to a harness."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FileChange:
    """One file change inside a harness, with ``path`` relative to the harness root.

    With ``old`` None the file is written whole (created or replaced) with ``new``.
    With ``old`` given, exactly one occurrence of ``old`` in the existing file becomes
    ``new``; a change that finds ``old`` zero or several times does not apply.
    """

    path: str
    new: str
    old: str | None = None


@dataclass(frozen=True)
class Patch:
    """An env-gated harness patch aimed at one (where, why) pathology cell.

    ``where`` is the lever whose files the patch changes; ``why`` the failure mode it
    targets; ``mechanism`` names what it does (free text or a catalogue name);
    ``env_gate`` is a predicate over task features (empty: every task); ``beacon`` is the
    activation beacon its code path emits when it acts.
    """

    id: str
    where: str
    why: str
    mechanism: str
    beacon: str
    env_gate: str = ""
    rationale: str = ""
    changes: tuple[FileChange, ...] = field(default_factory=tuple)
    predicted_tasks: tuple[str, ...] = field(default_factory=tuple)
