"""gsme.importers.gepa on a run GEPA itself made (offline: gsme.integrations.gepa_demo)."""

import contextlib
import io
import json

import pytest

gepa = pytest.importorskip("gepa")

from gepa_loader import Loader as _Loader  # a GEPA DataLoader stand-in

from gsme import importers, schema
from gsme.importers.gepa import BIAS_NOTE, component_path, read_gepa
from gsme.integrations import gepa_demo as demo
from gsme.settings import ConfigError

TRAIN, VAL = demo.make_tasks(12, prefix="r"), demo.make_tasks(12, prefix="v")
IDS = {"val_ids": [t["task_id"] for t in VAL], "train_ids": [t["task_id"] for t in TRAIN]}


@pytest.fixture(scope="module")
def gepa_run(tmp_path_factory):
    """A GEPA run by gepa.optimize: its run_dir and its result saved as JSON."""
    run_dir = tmp_path_factory.mktemp("gepa") / "run"
    with contextlib.redirect_stdout(io.StringIO()):
        result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=TRAIN, valset=VAL,
                               adapter=demo.DemoAdapter(seed=0),
                               reflection_lm=demo.ScriptedReflection(seed=0),
                               max_metric_calls=150, run_dir=str(run_dir), seed=0)
    saved = result.to_dict()
    (run_dir / "result.json").write_text(json.dumps(saved, default=str))
    return run_dir, saved


def test_every_candidate_is_a_commit_holding_its_texts(gepa_run, tmp_path):
    run_dir, saved = gepa_run
    run = read_gepa(run_dir, result=run_dir / "result.json", repo=tmp_path / "h", **IDS)
    assert len(run.candidates) == len(saved["candidates"]) >= 3
    assert run.candidates["commit"].notna().all()
    for name, texts in zip(run.candidates["candidate"], saved["candidates"]):
        files = run.repo.files(name)
        assert {p: t for p, t in files.items() if p.startswith("prompt/")} == {
            component_path(c): t for c, t in texts.items()}
        assert run.candidates.set_index("candidate").loc[name, "commit"] == run.repo.commit_of(
            name)
    parents = [schema.split_ids(p) for p in run.candidates["parents"]]
    assert parents == [[f"gepa-{p}" if p else "baseline" for p in ps if p is not None]
                       for ps in saved["parents"]]
    assert run.repo.lineage(run.best)[0] == "baseline"
    assert run.best == f"gepa-{saved['best_idx']}" or saved["best_idx"] == 0
    again = read_gepa(run_dir, result=run_dir / "result.json", repo=tmp_path / "h", **IDS)
    assert list(again.candidates["commit"]) == list(run.candidates["commit"])


def test_val_scores_are_selection_biased_trials(gepa_run):
    run_dir, saved = gepa_run
    run = read_gepa(run_dir, result=run_dir / "result.json", repo=False, **IDS)
    trials = run.trials
    assert (trials["split"] == "train").all() and trials["selection_biased"].all()
    assert BIAS_NOTE in set(run.dropped["reason"])
    for i, scores in enumerate(saved["val_subscores"]):
        mine = trials[trials["candidate"] == run.candidates["candidate"][i]]
        assert dict(zip(mine["task_id"], mine["score"])) == {
            IDS["val_ids"][int(k)]: float(v) for k, v in scores.items()}
    assert (trials["passed"] == (trials["score"] >= 1)).all()
    val_means = run.candidates.set_index("candidate")["val_score"]
    assert val_means.to_list() == pytest.approx(saved["val_aggregate_scores"])


def test_the_run_log_gives_every_proposal_and_its_paired_minibatch(gepa_run):
    run_dir, _ = gepa_run
    run = read_gepa(run_dir, result=run_dir / "result.json", repo=False, **IDS)
    log = json.loads((run_dir / "run_log.json").read_text())
    accepted = {e["i"] + 1: e["new_program_idx"] for e in log if "new_program_idx" in e}
    got = run.iterations[run.iterations["accepted"]]
    assert dict(zip(got["iteration"], got["child_index"].astype(int))) == accepted
    first = run.iterations.iloc[0]
    assert len(schema.split_ids(first["subsample_ids"])) == 3
    assert set(schema.split_ids(first["subsample_ids"])) <= set(IDS["train_ids"])


def test_the_pickle_is_read_only_when_trusted(gepa_run):
    run_dir, saved = gepa_run
    untrusted = read_gepa(run_dir, repo=False)
    assert untrusted.trials.empty
    assert any("no val scores" in r for r in untrusted.dropped["reason"])
    with pytest.warns(UserWarning, match="unpickling"):
        trusted = read_gepa(run_dir, trust_pickle=True, repo=False)
    assert len(trusted.trials) == sum(len(v) for v in saved["val_subscores"])


def test_the_format_is_registered_and_refuses_a_test_split(gepa_run):
    run_dir, _ = gepa_run
    assert importers.detect_format(run_dir) == "gepa"
    imported = importers.read(run_dir, result=run_dir / "result.json")
    assert imported.trials["selection_biased"].all()
    with pytest.raises(ConfigError, match="never as a sealed"):
        importers.read(run_dir, format="gepa", split="test", result=run_dir / "result.json")


# ----------------------------------------------- issue 32: GEPA's own indices, any id type


class _Echo(demo.ScriptedReflection):
    """A reflection model that returns the current text unchanged on its first call (GEPA
    then proposes, and may accept, a child with its parent's exact texts)."""

    def __init__(self, **options):
        super().__init__(**options)
        self.answered = 0

    def __call__(self, prompt):
        self.answered += 1
        if self.answered == 1:
            return "```\n" + str(prompt).split("```")[1].strip("\n") + "\n```"
        return super().__call__(prompt)


def test_a_child_with_its_parents_texts_shares_its_commit_and_keeps_its_children(tmp_path):
    train, val = demo.make_tasks(12, prefix="r"), demo.make_tasks(8, prefix="v")
    with contextlib.redirect_stdout(io.StringIO()):
        result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=train, valset=val,
                               adapter=demo.DemoAdapter(seed=2),
                               reflection_lm=_Echo(seed=0, targeted=1.0), max_metric_calls=120,
                               run_dir=str(tmp_path / "run"), seed=2)
    texts, parents = result.candidates, result.parents
    same = [i for i in range(1, len(texts)) if texts[i] == texts[parents[i][0]]]
    kids = [i for i in range(len(texts)) if parents[i][0] in same]
    assert same and kids                               # the case this test is about
    run = read_gepa(tmp_path / "run", result=result.to_dict(), repo=tmp_path / "h")
    frame = run.candidates.set_index("gepa_index")
    assert list(frame.index) == list(range(len(texts)))          # no node dropped
    for i in range(len(texts)):
        commit = run.repo.repo.commit(frame.loc[i, "commit"])
        files = {b.path: b.data_stream.read().decode() for b in commit.tree.traverse()
                 if b.type == "blob" and b.path.startswith("prompt/")}
        assert files == {component_path(c): t for c, t in texts[i].items()}
        assert schema.split_ids(frame.loc[i, "parents"]) == [
            "baseline" if p == 0 else f"gepa-{p}" for p in parents[i] if p is not None]
    for i in same:
        assert frame.loc[i, "commit"] == frame.loc[parents[i][0], "commit"]
        assert frame.loc[i, "branch"] == frame.loc[parents[i][0], "branch"]
    assert any("same texts as" in r for r in run.dropped["reason"])


def test_a_run_on_data_loaders_with_string_ids_keeps_gepas_ids(tmp_path):
    train, val = demo.make_tasks(12, prefix="r"), demo.make_tasks(8, prefix="v")
    with contextlib.redirect_stdout(io.StringIO()):
        result = gepa.optimize(seed_candidate=demo.SEED_CANDIDATE, trainset=_Loader(train),
                               valset=_Loader(val), adapter=demo.DemoAdapter(seed=0),
                               reflection_lm=demo.ScriptedReflection(seed=0, targeted=1.0),
                               max_metric_calls=120, run_dir=str(tmp_path / "run"), seed=0)
    saved = result.to_dict()
    (tmp_path / "result.json").write_text(json.dumps(saved, default=str))
    run = read_gepa(tmp_path / "run", result=tmp_path / "result.json", repo=False)
    for i, scores in enumerate(saved["val_subscores"]):
        mine = run.trials[run.trials["candidate"] == run.candidates["candidate"][i]]
        assert dict(zip(mine["task_id"], mine["score"])) == scores     # GEPA's ids, as text
    ids = {t for s in run.iterations["subsample_ids"] for t in schema.split_ids(s)}
    assert ids and ids <= {t["task_id"] for t in train}
    renamed = read_gepa(tmp_path / "run", result=saved, repo=False,
                        val_ids={t["task_id"]: t["task_id"].upper() for t in val})
    assert set(renamed.trials["task_id"]) == {t["task_id"].upper() for t in val}
    with pytest.raises(importers.LogError, match="val item 'v000' has no id"):
        read_gepa(tmp_path / "run", result=saved, repo=False, val_ids=["a", "b"])
