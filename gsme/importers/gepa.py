"""Read a GEPA run: every candidate a git commit, its val scores as (biased) trials.

GEPA (PyPI ``gepa``; ``dspy.GEPA`` wraps it) evolves text components. Its ``run_dir``
holds ``candidates.json`` (every candidate's texts, by GEPA's index), ``run_log.json`` (per
iteration the parent's and the child's minibatch scores on the same train ids, the index
of an accepted child, the parents of a merge) and ``gepa_state.bin`` (a pickle). GEPA does
not write its result: save ``GEPAResult.to_dict()`` (or DSPy's
``detailed_results.to_dict()``) as JSON and pass it as ``result`` for the lineage and the
per-instance val scores, or pass the result object itself.

**Selection-biased.** GEPA chose its candidates by their scores on the val set, one
rollout per item: those scores are the split that did the choosing, not a measurement of
it. They come out as trials on split ``"train"`` with the column ``selection_biased``
True, and ``dropped`` carries a note saying so; :func:`gsme.integrations.gepa.retest`
measures the choice on a sealed split instead. GEPA indexes val and train items by
position: ``val_ids`` and ``train_ids`` name them (default ``val-<i>``, ``train-<i>``).
GEPA scores an infrastructure exception as 0, so these trials cannot tell one apart
(``infra_ok`` is True throughout; the note says so). Scores go to the float column
``score`` and to ``passed`` (``score >= threshold``; exact where scores are 0/1).

The pickle is read only with ``trust_pickle=True`` (unpickling runs whatever code the
file names), with a warning.

Examples
--------
>>> component_path("predict.predict"), component_path("system prompt")
('prompt/predict.predict.txt', 'prompt/system_prompt.txt')
"""

from __future__ import annotations

import pickle
import re
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from gsme import schema
from gsme.gitrepo import HarnessRepo
from gsme.importers._common import Format, Imported, LogError, dropped_frame, read_json
from gsme.patches import FileChange, Patch
from gsme.settings import ConfigError

__all__ = ["BIAS_NOTE", "GEPA", "GepaRun", "candidate_name", "component_path", "read_gepa",
           "read_gepa_trials"]

BIAS_NOTE = ("selection-biased: GEPA chose its candidates by these val scores (one rollout "
             "per item); re-test the choice on a sealed split (gsme.integrations.gepa.retest)")
"""The note ``dropped`` carries for GEPA's val scores."""


class GepaRun(NamedTuple):
    """What :func:`read_gepa` returns.

    Attributes
    ----------
    trials : DataFrame
        GEPA's val scores: a trials frame (split ``"train"``, repeat 0) plus ``score``
        (GEPA's float) and ``selection_biased`` (True).
    dropped : DataFrame
        Notes on the whole run (``task_id`` None): the selection bias, 0-scored
        infrastructure failures, what could not be read.
    candidates : DataFrame
        A candidates frame (``baseline`` is GEPA's seed, ``gepa-<i>`` its candidate i;
        a merge is a ``recombination`` with both parents) plus ``gepa_index``,
        ``val_score`` (GEPA's mean val score; NaN when unknown), ``gepa_best`` (GEPA's
        choice) and ``pareto`` (on GEPA's per-instance Pareto front).
    iterations : DataFrame
        One row per proposal in ``run_log.json``: ``iteration, kind`` (mutation / merge),
        ``parent, other_parent, child`` (None when rejected), ``subsample_ids``,
        ``scores_before, scores_after`` (comma-separated, on the same ids),
        ``sum_before, sum_after, accepted``.
    texts : dict
        Candidate → its component texts.
    repo : HarnessRepo or None
        The repository holding one commit per candidate (None with ``repo=False``).
    best : str
        The candidate GEPA chose (highest mean val score, first on ties, as GEPA's).

    Examples
    --------
    >>> import contextlib, io, json
    >>> import gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> val = demo.make_tasks(4, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE,
    ...                            trainset=demo.make_tasks(6), valset=val,
    ...                            adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0),
    ...                            max_metric_calls=30, run_dir="run", seed=0)
    >>> json.dump(result.to_dict(), open("run/result.json", "w"), default=str)
    >>> run = read_gepa("run", result="run/result.json", repo=False)
    >>> run.trials[["candidate", "task_id", "split", "passed"]].head(3)
      candidate task_id  split  passed
    0  baseline   val-0  train   False
    1  baseline   val-1  train   False
    2  baseline   val-2  train    True
    >>> len(run.iterations), run.repo
    (4, None)
    """

    trials: pd.DataFrame
    dropped: pd.DataFrame
    candidates: pd.DataFrame
    iterations: pd.DataFrame
    texts: dict
    repo: HarnessRepo | None
    best: str


def candidate_name(index: int) -> str:
    """gsme's id of GEPA's candidate ``index``: ``baseline`` for the seed, else ``gepa-<i>``.

    Examples
    --------
    >>> candidate_name(0), candidate_name(3)
    ('baseline', 'gepa-3')
    """
    return schema.BASELINE if int(index) == 0 else f"gepa-{int(index)}"


def component_path(name: str) -> str:
    """The harness file of a GEPA component: ``prompt/<name>.txt``, unsafe characters ``_``.

    Examples
    --------
    >>> component_path("system prompt")
    'prompt/system_prompt.txt'
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", str(name)).lstrip(".-") or "component"
    return f"prompt/{safe[:70]}.txt"


def read_gepa(run_dir, *, result=None, trust_pickle: bool = False, repo=None,
              val_ids: Sequence[str] | Mapping | None = None,
              train_ids: Sequence[str] | Mapping | None = None,
              threshold: float = 1.0) -> GepaRun:
    """Read the GEPA run at ``run_dir`` and commit each candidate to a harness repository.

    Parameters
    ----------
    run_dir : path
        GEPA's ``run_dir`` (DSPy's ``log_dir``).
    result : path, dict or object, optional
        ``GEPAResult.to_dict()`` saved as JSON, that dict, or a ``GEPAResult`` /
        ``DspyGEPAResult``: lineage, val scores, Pareto front. Without it (and without the
        pickle) lineage comes from ``run_log.json`` and there are no val trials.
    trust_pickle : bool
        Read ``gepa_state.bin`` when ``result`` is not given (a warning is issued).
    repo : path, False or None
        Where the harness repository goes (None: ``<run_dir>/gsme_harness``; an existing
        one made by an earlier import is reused); False: no commits.
    val_ids, train_ids : sequence or mapping, optional
        Task ids of GEPA's val and train items: a sequence in GEPA's order (a list
        valset), or a mapping from GEPA's ids (a ``DataLoader``'s). Default: a
        ``DataLoader``'s ids as text, ``val-<i>`` / ``train-<i>`` for a list's positions.
    threshold : float
        A score at least this passes.

    Returns
    -------
    GepaRun

    Examples
    --------
    A small offline GEPA run (the simulated world of :mod:`gsme.integrations.gepa_demo`):

    >>> import contextlib, io, json
    >>> import gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> val = demo.make_tasks(4, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE,
    ...                            trainset=demo.make_tasks(6), valset=val,
    ...                            adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0),
    ...                            max_metric_calls=30, run_dir="run", seed=0)
    >>> json.dump(result.to_dict(), open("run/result.json", "w"), default=str)
    >>> run = read_gepa("run", result="run/result.json", val_ids=[v["task_id"] for v in val])
    >>> run.candidates[["candidate", "parents", "val_score", "gepa_best"]]
      candidate   parents  val_score  gepa_best
    0  baseline                 0.25       True
    1    gepa-1  baseline       0.25      False
    >>> run.best, bool(run.trials["selection_biased"].all())
    ('baseline', True)
    >>> run.repo.commit_of("gepa-1") is not None
    True
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run_dir {run_dir} is not a folder")
    data, source = _result_data(run_dir, result, trust_pickle)
    texts = _candidate_texts(run_dir, data)
    log = read_json(run_dir / "run_log.json") if (run_dir / "run_log.json").is_file() else []
    parents = _lineage(data, log, len(texts))
    names = [candidate_name(i) for i in range(len(texts))]
    iterations = _iterations(log, names, train_ids, val_ids)
    accepted = iterations[iterations["accepted"]]
    rounds = dict(zip(accepted["child_index"].astype(int), accepted["iteration"]))
    notes = [BIAS_NOTE, ("GEPA scores an infrastructure exception as 0: such items cannot be "
                        "told apart here (infra_ok is True throughout)")]
    val = (data or {}).get("val_subscores")
    if val is None:
        notes.append("no val scores: pass result= (GEPAResult.to_dict() as JSON) or "
                     "trust_pickle=True")
    trials = _trials(val or [], names, val_ids, threshold, notes)
    scores = [np.mean(list(v.values())) if v else np.nan for v in val] if val else (
        [np.nan] * len(texts))
    best = int(data["best_idx"]) if data and "best_idx" in data else int(
        np.nanargmax(scores)) if val else 0
    front = {int(i) for ids in (data or {}).get("per_val_instance_best_candidates", {}).values()
             for i in ids}
    frame = pd.DataFrame({
        "candidate": names,
        "parents": [schema.join_ids(names[p] for p in ps) for ps in parents],
        "kind": ["baseline"] + ["recombination" if len(ps) > 1 else "mutation"
                                for ps in parents[1:]],
        "where": [None] + ["prompt"] * (len(names) - 1),
        "why": [None] + ["gepa-merge" if len(ps) > 1 else "gepa-reflection" for ps in parents[1:]],
        "patch_id": [None] + names[1:], "beacon": [None] + names[1:], "env_gate": None,
        "commit": None, "branch": None,
        "round": np.array([rounds.get(i, 0 if i == 0 else i) for i in range(len(names))],
                          dtype=np.int64),
        "rationale": [f"GEPA candidate {i} ({source})" for i in range(len(names))],
        "gepa_index": np.arange(len(names), dtype=np.int64),
        "val_score": np.asarray(scores, dtype=float),
        "gepa_best": np.arange(len(names)) == best,
        "pareto": [i in front for i in range(len(names))],
    }, dtype=object)
    for column in ("round", "gepa_index"):
        frame[column] = frame[column].astype(np.int64)
    frame["val_score"] = frame["val_score"].astype(float)
    frame[["gepa_best", "pareto"]] = frame[["gepa_best", "pareto"]].astype(bool)
    texts_by = dict(zip(names, texts))
    owner = _owners(names, texts, parents, notes)
    harness = None
    if repo is not False:
        harness = _commit_all(Path(repo) if repo is not None else run_dir / "gsme_harness",
                              names, texts, parents, owner, frame)
        frame["commit"] = [harness.commit_of(n) for n in owner]
        frame["branch"] = ["gsme/" + n for n in owner]
    schema.validate(frame, "candidates")
    dropped = dropped_frame([{"candidate": None, "source": str(run_dir), "task_id": None,
                              "reason": note} for note in notes])
    return GepaRun(trials, dropped, frame, iterations, texts_by, harness, names[best])


def read_gepa_trials(path, *, candidate: str | None = None, split: str = "train",
                     **options) -> Imported:
    """GEPA's val scores as an :class:`~gsme.importers.Imported` (``read(format="gepa")``).

    ``options`` go to :func:`read_gepa` (``result=`` is needed for scores); no repository
    is written. A GEPA run holds many candidates, so ``candidate`` cannot rename it, and its
    val scores chose those candidates, so they are never a ``"test"`` split.

    Examples
    --------
    >>> import contextlib, io, json
    >>> import gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> val = demo.make_tasks(4, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE,
    ...                            trainset=demo.make_tasks(6), valset=val,
    ...                            adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0),
    ...                            max_metric_calls=30, run_dir="run", seed=0)
    >>> json.dump(result.to_dict(), open("run/result.json", "w"), default=str)
    >>> imported = read_gepa_trials("run", result="run/result.json")
    >>> len(imported.trials), bool(imported.dropped["reason"].str.startswith("selection").any())
    (8, True)
    """
    if candidate is not None:
        raise ConfigError("a GEPA run holds many candidates and cannot be read as one; use "
                          "gsme.importers.gepa.read_gepa and pick candidates from its trials")
    if split != "train":
        raise ConfigError("GEPA's val scores chose its candidates: they are selection-biased "
                          "and are read as split 'train', never as a sealed 'test'")
    run = read_gepa(path, repo=False, **options)
    return Imported(run.trials, run.dropped)


# ------------------------------------------------------------------------------ reading

def _result_data(run_dir: Path, result, trust_pickle: bool) -> tuple[dict | None, str]:
    if result is not None:
        if hasattr(result, "to_dict"):
            return _jsonish(result.to_dict()), "result object"
        if isinstance(result, Mapping):
            return _jsonish(result), "result dict"
        data = read_json(Path(result))
        if not isinstance(data, Mapping) or "candidates" not in data:
            raise LogError(f"{result} is not a saved GEPAResult.to_dict() (no 'candidates')")
        return dict(data), Path(result).name
    state = run_dir / "gepa_state.bin"
    if trust_pickle and state.is_file():
        warnings.warn(f"unpickling {state}: this runs whatever code the file names; read only "
                      "files you trust", UserWarning, stacklevel=3)
        with open(state, "rb") as f:
            saved = pickle.load(f)
        front = saved.get("program_at_pareto_front_valset", {})
        return {"candidates": saved["program_candidates"],
                "parents": saved["parent_program_for_candidate"],
                "val_subscores": saved["prog_candidate_val_subscores"],
                "per_val_instance_best_candidates": {k: sorted(v) for k, v in front.items()}
                }, state.name
    return None, "run_log.json"


def _jsonish(data: Mapping) -> dict:
    """The fields read here, as plain lists and dicts."""
    keys = ("candidates", "parents", "val_subscores", "per_val_instance_best_candidates",
            "best_idx")
    return {k: data[k] for k in keys if k in data and data[k] is not None}


def _candidate_texts(run_dir: Path, data) -> list[dict]:
    file = run_dir / "candidates.json"
    saved = read_json(file) if file.is_file() else None
    texts = data["candidates"] if data else saved
    if texts is None:
        raise LogError(f"no candidates.json in {run_dir} and no result given")
    if saved is not None and [dict(t) for t in saved] != [dict(t) for t in texts]:
        raise LogError(f"{file} and the result hold different candidates ({len(saved)} and "
                       f"{len(texts)}); they come from different runs or a resumed one")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, Mapping)
           or not all(isinstance(v, str) for v in t.values())]
    if bad:
        raise LogError(f"candidates {bad[:10]} are not mappings of component name to text")
    return [dict(t) for t in texts]


def _lineage(data, log: list, n: int) -> list[list[int]]:
    if data and "parents" in data:
        parents = [[int(p) for p in ps if p is not None] for ps in data["parents"]]
    else:
        parents = [[] for _ in range(n)]
        for entry in log:
            ids = entry.get("new_program_indices") or ([entry["new_program_idx"]]
                                                       if "new_program_idx" in entry else [])
            for idx in ids:
                merged = entry.get("merged_entities")
                parents[int(idx)] = ([int(merged[0]), int(merged[1])] if merged
                                     else [int(entry["selected_program_candidate"])])
    missing = [i for i in range(1, n) if not parents[i]]
    if missing:
        raise LogError(f"no parent known for candidates {missing[:10]}; pass result=")
    return parents


def _iterations(log: list, names: list[str], train_ids, val_ids) -> pd.DataFrame:
    """A merge's minibatch is drawn from the val set, a mutation's from the train set."""
    rows = []
    for entry in log:
        accepted = entry.get("new_program_indices") or (
            [entry["new_program_idx"]] if "new_program_idx" in entry else [])
        base = {"iteration": int(entry["i"]) + 1}
        if entry.get("merged_entities"):
            # GEPA keeps a merge scoring at least its better parent: that parent is its pair
            sides = [(int(x), entry.get(f"id{n}_subsample_scores", []))
                     for n, x in ((1, entry["merged_entities"][0]),
                                  (2, entry["merged_entities"][1]))]
            (first, before), (second, _) = sorted(sides, key=lambda s: -sum(s[1]))
            tasks = [{"parent_idx": first, "other": second, "kind": "merge",
                      "subsample_ids": entry.get("subsample_ids", []), "subsample_scores": before,
                      "new_subsample_scores": entry.get("new_program_subsample_scores")}]
        else:
            tasks = [{**t, "kind": "mutation", "other": None} for t in entry.get("tasks", [])]
        for task in tasks:
            if task.get("new_subsample_scores") is None:
                continue  # skipped: perfect parent scores, or no proposal
            child = accepted.pop(0) if accepted else None
            ids = [_id(val_ids, i, "val") if task["kind"] == "merge" else
                   _id(train_ids, i, "train") for i in task["subsample_ids"]]
            before = [float(s) for s in task["subsample_scores"]]
            after = [float(s) for s in task["new_subsample_scores"]]
            rows.append({**base, "kind": task["kind"],
                         "parent": names[int(task["parent_idx"])],
                         "other_parent": None if task["other"] is None else names[task["other"]],
                         "child": None if child is None else names[int(child)],
                         "child_index": child, "subsample_ids": schema.join_ids(ids),
                         "scores_before": schema.join_ids(before),
                         "scores_after": schema.join_ids(after), "sum_before": sum(before),
                         "sum_after": sum(after), "accepted": child is not None})
    columns = ["iteration", "kind", "parent", "other_parent", "child", "child_index",
               "subsample_ids", "scores_before", "scores_after", "sum_before", "sum_after",
               "accepted"]
    return pd.DataFrame(rows, columns=columns).astype({"accepted": bool, "child_index": "Int64"})


def _id(ids, key, what: str) -> str:
    """The task id of GEPA's item ``key``: a list position (``<what>-<i>``, or ``ids[i]``
    for a sequence ``ids``) or a ``DataLoader``'s own id (as text, or ``ids[key]`` for a
    mapping ``ids``)."""
    if isinstance(ids, Mapping):
        named = {str(k): v for k, v in ids.items()}  # saved as JSON, GEPA's keys are text
        if str(key) not in named:
            raise LogError(f"GEPA's {what} item {key!r} has no id in {what}_ids (a mapping "
                           f"of {len(named)} GEPA ids)")
        return str(named[str(key)])
    position = _position(key)
    if ids is None:
        return str(key) if position is None else f"{what}-{position}"
    if position is None or not 0 <= position < len(ids):
        raise LogError(f"GEPA's {what} item {key!r} has no id: {what}_ids holds {len(ids)} "
                       "positions (a DataLoader's ids take a mapping, or none)")
    return str(ids[position])


def _position(key) -> int | None:
    """``key`` as a list position (an int, or its decimal text: JSON keys are text), or None
    for a ``DataLoader``'s own id."""
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return int(key)
    if isinstance(key, str) and key.isdigit() and str(int(key)) == key:
        return int(key)
    return None


def _trials(val: list, names: list[str], val_ids, threshold: float, notes: list) -> pd.DataFrame:
    rows = [{"candidate": names[i], "task_id": _id(val_ids, key, "val"), "split": "train",
             "repeat": 0, "score": float(score), "passed": float(score) >= threshold,
             "selection_biased": True}
            for i, scores in enumerate(val) for key, score in scores.items()]
    if not rows:
        return schema.as_trials(pd.DataFrame(columns=["candidate", "task_id", "split", "repeat",
                                                      "passed", "score", "selection_biased"]))
    frame = pd.DataFrame(rows)
    if not frame["score"].isin([0.0, 1.0]).all():
        notes.append(f"scores are not all 0/1: passed is score >= {threshold}; GEPA's "
                     "float scores are in the score column")
    return schema.as_trials(frame)


# ------------------------------------------------------------------------------ commits

def _owners(names, texts, parents, notes: list) -> list[str]:
    """The candidate whose commit holds each candidate's texts: itself, or for a child with
    a parent's exact texts that parent's owner (GEPA keeps such a child as a node)."""
    owner = list(names)
    for i in range(1, len(names)):
        same = next((p for p in parents[i] if _files(texts[p]) == _files(texts[i])), None)
        if same is not None:
            owner[i] = owner[same]
            notes.append(f"{names[i]} has the same texts as its parent {names[same]}: it shares "
                         f"the commit of {owner[i]} (commit and branch columns)")
    return owner


def _commit_all(path: Path, names, texts, parents, owner, frame) -> HarnessRepo:
    """One commit per candidate that owns its texts: the seed's files at the root, each child
    over its parent's owner; a merge as a git merge where git yields GEPA's texts."""
    if path.exists() and any(path.iterdir()):
        repo = HarnessRepo.open(path)
        known = set(repo.candidates()["candidate"])
        for i, name in enumerate(names):
            if name in known and _components(repo.files(name)) != _files(texts[i]):
                raise LogError(f"{path} holds a different {name}; import into a new folder")
    else:
        with tempfile.TemporaryDirectory() as seed:
            for rel, text in _files(texts[0]).items():
                (Path(seed) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(seed) / rel).write_text(text, encoding="utf-8")
            repo = HarnessRepo.init(path, baseline_dir=seed)
        known = {schema.BASELINE}
    for i in range(1, len(names)):
        if names[i] in known or owner[i] != names[i]:
            continue
        bases = list(dict.fromkeys(owner[p] for p in parents[i]))
        after = _files(texts[i])
        if len(bases) > 1 and _merged(repo, names, bases, i, frame, after):
            continue
        before = _files(texts[parents[i][0]])
        changes = tuple(FileChange(p, t) for p, t in after.items() if before.get(p) != t)
        parent = names[parents[i][0]]
        via = f" (its commit is {bases[0]}'s)" if bases[0] != parent else ""
        other = (f"; a merge with {bases[1]} that git cannot reproduce, committed over "
                 f"{bases[0]}" if len(bases) > 1 else "")
        patch = Patch(id=names[i], where="prompt", why=frame.loc[i, "why"],
                      mechanism=f"GEPA candidate {i}", beacon=names[i],
                      rationale=f"GEPA candidate {i}, child of {parent}{via}{other}",
                      changes=changes)
        repo.add_mutation(bases[0], patch, round=int(frame.loc[i, "round"]), candidate=names[i])
    return repo


def _merged(repo: HarnessRepo, names, bases, i, frame, after) -> bool:
    """Commit a GEPA merge as a git merge of its parents' owners when git yields GEPA's
    texts."""
    made, _ = repo.recombine(bases[0], bases[1:], round=int(frame.loc[i, "round"]),
                             candidate=names[i])
    if made is not None and _components(repo.files(made)) == after:
        return True
    if made is not None:
        repo.discard(made)
    return False


def _files(candidate: Mapping[str, str]) -> dict[str, str]:
    files = {component_path(name): text for name, text in candidate.items()}
    if len(files) != len(candidate):
        raise LogError(f"component names {sorted(candidate)} map to clashing file names")
    return files


def _components(files: Mapping[str, str]) -> dict[str, str]:
    return {p: t for p, t in files.items() if p.startswith("prompt/")}


class GEPA(Format):
    """The ``gepa`` format: :func:`read_gepa_trials` (val scores, selection-biased).

    Examples
    --------
    >>> import contextlib, io, json
    >>> import gepa
    >>> from gsme.integrations import gepa_demo as demo
    >>> val = demo.make_tasks(4, prefix="v")
    >>> with contextlib.redirect_stdout(io.StringIO()):
    ...     result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE,
    ...                            trainset=demo.make_tasks(6), valset=val,
    ...                            adapter=demo.DemoAdapter(seed=0),
    ...                            reflection_lm=demo.ScriptedReflection(seed=0),
    ...                            max_metric_calls=30, run_dir="run", seed=0)
    >>> json.dump(result.to_dict(), open("run/result.json", "w"), default=str)
    >>> GEPA().guess_can_open(Path("run")), len(GEPA().read("run", result="run/result.json").trials)
    (True, 8)
    """

    summary = "a GEPA run_dir (val scores: selection-biased)"

    def read(self, path, **options) -> Imported:
        return read_gepa_trials(path, **options)

    def guess_can_open(self, path: Path) -> bool:
        return (path.is_dir() and (path / "candidates.json").is_file()
                and (path / "run_log.json").is_file())
