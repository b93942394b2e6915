"""The lazy data of ``gsme view``'s page: the transcripts and their index, in chunks.

A page opened from disk (``file://``) may load scripts but not fetch files, so each chunk
is a small script, ``<kind>-<n>.js``, that hands its payload to the page:
``gsmeChunk("<kind>", "<n>", "<base64>")``, the payload being zlib-compressed JSON (the
page inflates it with the browser's ``DecompressionStream``). The page loads a chunk when
it needs it: the first index chunk when it opens, every index chunk when a search or a
sort asks for them, a text chunk when a transcript is opened, a candidate's changed trials
when its list is opened. So the page's first load does not grow with the run, and
building it holds one chunk of transcripts in memory at a time, read from the ledger as
they are written.

Chunks:

* ``index-<n>``: rows ``n·INDEX_ROWS ..`` of the transcript index, as columns: ``candidate,
  task, split, pathology`` (codes into the page's dictionaries), ``repeat, attempt``,
  ``outcome`` (0 failed, 1 passed, 2 environment failure) and ``first`` (the transcript's
  first non-empty line, at most :data:`FIRST_CHARS` characters).
* ``text-<n>``: the texts of transcripts ``n·TEXT_ROWS ..``.
* ``changed-<i>``: candidate ``i``'s repeats that changed outcome from its parent: rows of
  ``task, repeat, change, parent row, child row`` (rows of the index, -1 for none).
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["FIRST_CHARS", "INDEX_ROWS", "TEXT_ROWS", "Dictionaries", "write_changed",
           "write_chunk", "write_transcripts"]

INDEX_ROWS = 5000
"""Transcript index rows per chunk (a search loads them all; opening the page, the first);
a multiple of :data:`TEXT_ROWS`, so a text chunk never spans two index chunks."""
TEXT_ROWS = 250
"""Transcript texts per chunk (opening one transcript loads its chunk)."""
FIRST_CHARS = 100
"""Characters of a transcript's first line shown in the index."""
OUTCOMES_SHOWN = ("failed", "passed", "environment failure")
"""A trial's outcome as the page names it, in code order (the index holds the codes)."""


class Dictionaries:
    """The page's code books: each candidate, task, split and pathology is written once
    (in the page) and referred to by its position in the chunks.

    Examples
    --------
    >>> import pandas as pd
    >>> index = pd.DataFrame({"candidate": ["c0001", "baseline"], "task_id": ["t2", "t1"],
    ...                       "split": ["train", "train"], "pathology": [None, "looping"]})
    >>> books = Dictionaries(index)
    >>> books.values["candidate"], books.values["pathology"]
    (['baseline', 'c0001'], ['', 'looping'])
    >>> books.codes("candidate", index["candidate"]), books.codes("pathology", index["pathology"])
    ([1, 0], [0, 1])
    """

    def __init__(self, index: pd.DataFrame):
        self.values = {name: sorted(index[column].dropna().astype(str).unique())
                       for name, column in (("candidate", "candidate"), ("task", "task_id"),
                                            ("split", "split"), ("pathology", "pathology"))}
        self.values["pathology"] = ["", *[v for v in self.values["pathology"] if v]]
        self.values["outcome"] = list(OUTCOMES_SHOWN)
        self._codes = {name: {v: i for i, v in enumerate(values)}
                       for name, values in self.values.items()}

    def codes(self, name: str, column: pd.Series) -> list[int]:
        """``column``'s values as codes of dictionary ``name`` (missing: the empty value)."""
        book = self._codes[name]
        return [book.get("" if pd.isna(v) else str(v), 0) for v in column]


def write_transcripts(run, index: pd.DataFrame, folder: Path, books: Dictionaries, *,
                      bar=None) -> int:
    """Write the index and text chunks of ``index`` (:func:`gsme.explain.transcripts` with
    ``text=False``, in page order) into ``folder``, reading each text from the ledger as
    its chunk is written; return the number of index chunks. ``bar`` (a tqdm bar or None)
    advances by one per transcript.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from gsme import explain
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, finalize=False)  # SIMULATED
    >>> index = explain.transcripts(run, text=False)
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_transcripts(run, index, folder, Dictionaries(index))
    1
    >>> len(list(folder.glob("text-*.js"))) == -(-len(index) // TEXT_ROWS)
    True
    >>> run.close()
    """
    for start in range(0, len(index), INDEX_ROWS):
        block = index.iloc[start:start + INDEX_ROWS]
        firsts = []
        for at in range(0, len(block), TEXT_ROWS):
            refs = block["trajectory"].iloc[at:at + TEXT_ROWS]
            texts = [run.transcript(ref) for ref in refs]
            write_chunk(folder, "text", (start + at) // TEXT_ROWS, texts)
            firsts += [_first_line(text) for text in texts]
            if bar is not None:
                bar.update(len(texts))
        outcome = np.where(~block["infra_ok"].to_numpy(dtype=bool), OUTCOMES_SHOWN[2],
                           np.where(block["passed"].to_numpy(dtype=bool), OUTCOMES_SHOWN[1],
                                    OUTCOMES_SHOWN[0]))
        write_chunk(folder, "index", start // INDEX_ROWS, {
            "candidate": books.codes("candidate", block["candidate"]),
            "task": books.codes("task", block["task_id"]),
            "split": books.codes("split", block["split"]),
            "pathology": books.codes("pathology", block["pathology"]),
            "repeat": block["repeat"].astype(int).tolist(),
            "attempt": block["attempt"].astype(int).tolist(),
            "outcome": books.codes("outcome", outcome),
            "first": firsts})
    return -(-len(index) // INDEX_ROWS)


def write_changed(folder: Path, number: int, pairs: pd.DataFrame, rows: pd.Series) -> None:
    """Write candidate ``number``'s changed repeats (rows of
    :func:`gsme.explain.paired_trials`); ``rows`` maps a transcript reference to its index
    row (-1 where it has none).

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from pathlib import Path
    >>> pairs = pd.DataFrame({"task_id": ["t1"], "repeat": [0], "change": ["fixed"],
    ...                       "trajectory_parent": ["p/t1/r0"], "trajectory_child": ["c/t1/r0"]})
    >>> folder = Path(tempfile.mkdtemp())
    >>> write_changed(folder, 3, pairs, pd.Series({"p/t1/r0": 7}))
    >>> sorted(p.name for p in folder.iterdir())
    ['changed-3.js']
    """
    def row_of(refs: pd.Series) -> list[int]:
        return refs.map(rows).fillna(-1).astype(int).tolist()

    write_chunk(folder, "changed", number, {
        "task": pairs["task_id"].astype(str).tolist(),
        "repeat": pairs["repeat"].astype(int).tolist(),
        "change": pairs["change"].astype(str).tolist(),
        "parent": row_of(pairs["trajectory_parent"]),
        "child": row_of(pairs["trajectory_child"])})


def write_chunk(folder: Path, kind: str, number: int, payload) -> Path:
    """Write one chunk script; return its path.

    Examples
    --------
    >>> import base64, json, tempfile, zlib
    >>> from pathlib import Path
    >>> path = write_chunk(Path(tempfile.mkdtemp()), "text", 0, ["a transcript"])
    >>> script = path.read_text()
    >>> script.startswith('gsmeChunk("text","0","')
    True
    >>> json.loads(zlib.decompress(base64.b64decode(script.split('"')[5])))
    ['a transcript']
    """
    packed = zlib.compress(json.dumps(payload, separators=(",", ":"),
                                      ensure_ascii=False).encode("utf-8"), 6)
    path = folder / f"{kind}-{number}.js"
    path.write_text(f'gsmeChunk("{kind}","{number}","{base64.b64encode(packed).decode()}");\n',
                    encoding="ascii")
    return path


def _first_line(text: str) -> str:
    return next((line for line in text.splitlines() if line.strip()), "")[:FIRST_CHARS]
