"""The evolvable ``why`` vocabulary: failure-mode labels with definitions and provenance.

Labels are slugs (``premature-finalization``). :meth:`Vocabulary.add` normalises a new
label and returns the existing one when it is already known, so ``"Premature
finalization"``, ``"premature_finalization"`` and ``"premature-finalization"`` are one
label and the archive never splits a cell over spellings.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import pandas as pd

from gsme.schema import FAILURE_MODES

__all__ = ["DEFAULT_LABELS", "Label", "Vocabulary"]

DEFAULT_LABELS = FAILURE_MODES


@dataclass(frozen=True)
class Label:
    """One failure mode: its slug, what it means, and who added it.

    Examples
    --------
    >>> vocab = Vocabulary([Label("looping", "Repeats the same action.", added_by="gsme")])
    >>> vocab.labels
    ['looping']
    """

    label: str
    definition: str
    added_by: str


class Vocabulary:
    """An ordered, de-duplicated set of ``why`` labels.

    Examples
    --------
    >>> vocab = Vocabulary.default()
    >>> vocab.add("Premature finalization", "dup", added_by="evolver")
    'premature-finalization'
    >>> vocab.add("Hallucinated API", "Calls an API that does not exist.", added_by="evolver")
    'hallucinated-api'
    >>> len(vocab), vocab.labels[-1]
    (8, 'hallucinated-api')
    """

    def __init__(self, entries=()):
        self._entries: dict[str, Label] = {}
        for entry in entries:
            if not isinstance(entry, Label):
                raise TypeError(f"entries must be Label objects, got {type(entry).__name__}")
            self.add(entry.label, entry.definition, entry.added_by)

    @classmethod
    def default(cls) -> Vocabulary:
        """The built-in failure modes, added by ``"gsme"``."""
        return cls(Label(k, v, "gsme") for k, v in DEFAULT_LABELS.items())

    @staticmethod
    def normalise(label: str) -> str:
        """Lowercase slug of ``label``: runs of anything but letters and digits become '-'.

        Raises
        ------
        ValueError
            When nothing of ``label`` is left (empty or punctuation only).
        """
        if not isinstance(label, str):
            raise TypeError(f"label must be a string, got {type(label).__name__}")
        slug = re.sub(r"[^a-z0-9]+", "-", label.strip().lower()).strip("-")
        if not slug:
            raise ValueError(f"label {label!r} has no letters or digits")
        return slug

    def add(self, label: str, definition: str, added_by: str) -> str:
        """Add ``label`` unless its normalised form is known; return the label kept.

        The first definition and author of a label are kept; a repeat changes nothing.
        """
        slug = self.normalise(label)
        if slug in self._entries:
            return slug
        for name, value in (("definition", definition), ("added_by", added_by)):
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} of label {slug!r} must be a non-empty string, "
                                 f"got {value!r}")
        self._entries[slug] = Label(slug, definition.strip(), added_by.strip())
        return slug

    @property
    def labels(self) -> list[str]:
        """The labels in the order they were added."""
        return list(self._entries)

    def definition(self, label: str) -> str:
        """Definition of ``label`` (normalised first)."""
        slug = self.normalise(label)
        if slug not in self._entries:
            raise KeyError(f"unknown why label {slug!r}; known labels: {self.labels}")
        return self._entries[slug].definition

    def __contains__(self, label) -> bool:
        try:
            return self.normalise(label) in self._entries
        except (TypeError, ValueError):
            return False

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other) -> bool:
        return isinstance(other, Vocabulary) and list(self._entries.values()) == list(
            other._entries.values())

    def __repr__(self) -> str:
        return f"Vocabulary({self.labels})"

    def to_frame(self) -> pd.DataFrame:
        """One row per label, in order.

        Returns
        -------
        DataFrame
            Columns ``label, definition, added_by``.
        """
        rows = [asdict(e) for e in self._entries.values()]
        return pd.DataFrame(rows, columns=["label", "definition", "added_by"], dtype=object)

    def to_dict(self) -> dict:
        """A JSON/TOML-ready dict: ``{"labels": [{label, definition, added_by}, ...]}``."""
        return {"labels": [asdict(e) for e in self._entries.values()]}

    @classmethod
    def from_dict(cls, data: dict) -> Vocabulary:
        """Inverse of :meth:`to_dict`.

        Raises
        ------
        ValueError
            ``data`` is not ``{"labels": [...]}`` or an entry lacks or adds keys.
        """
        entries = data.get("labels") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            raise ValueError(  # noqa: TRY004 - bad stored data, not a caller's type slip
                f"vocabulary data must be {{'labels': [...]}}, got {data!r}")
        keys = {"label", "definition", "added_by"}
        bad = [i for i, e in enumerate(entries) if not isinstance(e, dict) or set(e) != keys]
        if bad:
            raise ValueError(f"vocabulary labels at positions {bad} must have exactly the keys "
                             f"{sorted(keys)}")
        return cls(Label(**e) for e in entries)
