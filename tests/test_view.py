"""gsme.view and ``gsme view``: a run as a page and its chunks in one folder, escaped."""

import base64
import json
import re
import threading
import zlib
from html.parser import HTMLParser

import pandas as pd
import pytest

from gsme import explain, view, view_data
from gsme.cli import main
from gsme.experiments import simulated_run
from gsme.run import Run

HOSTILE = "<script>alert('pwned')</script> & <img src=x onerror=alert(1)>"
HOSTILE_TASK = "</script><script>alert('task')</script>"


class Structure(HTMLParser):
    """Tags, ids and classes of a page, and its text (what a browser would show)."""

    def __init__(self):
        super().__init__()
        self.tags, self.ids, self.classes, self.text = [], set(), [], []
        self.sources = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self.ids.add(attrs.get("id"))
        self.classes += (attrs.get("class") or "").split()
        for key in ("src", "href"):
            if attrs.get(key):
                self.sources.append(attrs[key])

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> Structure:
    parsed = Structure()
    parsed.feed(page)
    return parsed


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    with simulated_run("tiny", root=tmp_path_factory.mktemp("sealed"), seed=0, rounds=1) as run:
        path = run.path
    return path


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """An unsealed run with one trial whose transcript holds markup."""
    with simulated_run("tiny", root=tmp_path_factory.mktemp("live"), seed=1, rounds=1,
                       finalize=False) as run:
        row = run.trials(split="train").iloc[0].to_dict()
        row.update(repeat=99, attempt=0, trajectory="train/hostile/r99a0")
        run.trial_sink().record_trials([(row, f"first line\n{HOSTILE}\nlast line")])
        row.update(task_id=HOSTILE_TASK, trajectory="train/hostile-task/r99a0")
        run.trial_sink().record_trials([(row, "a task id holding markup")])
        path = run.path
    return path


def write(run, tmp_path) -> str:
    """The page ``view.write`` writes for ``run`` into a new folder under ``tmp_path``."""
    folder = tmp_path / f"view-{len(list(tmp_path.iterdir()))}"
    return view.write(run, folder).read_text(encoding="utf-8")


def chunk(path) -> object:
    """A chunk script's payload, decoded as the page decodes it."""
    kind, number, packed = re.fullmatch(r'gsmeChunk\("(\w+)","(\w+)","([^"]*)"\);\n',
                                        path.read_text(encoding="ascii")).groups()
    assert path.name == f"{kind}-{number}.js"
    return json.loads(zlib.decompress(base64.b64decode(packed)))


def test_page_holds_every_section_and_every_candidates_diff(sealed, tmp_path):
    with Run.open(sealed, read_only=True) as run:
        page = write(run, tmp_path)
        candidates = run.candidates()["candidate"].tolist()
        n_transcripts = run.trials()["trajectory"].dropna().nunique()
    parsed = parse(page)
    assert {"run-table", "figures", "decisions", "archive", "candidates", "transcripts",
            "search", "transcript-table", "gsme-data"} <= parsed.ids
    for name in candidates:
        assert f"candidate-{name}" in parsed.ids
        section = page.split(f"id='candidate-{name}'", 1)[1].split("</section>", 1)[0]
        assert "class='gsme-diff'" in section and "diff --git" in section
        assert "class='gsme-add'" in section  # every candidate adds files
    # figures are embedded; the page's own scripts are inline (its data loads from chunks)
    images = [s for s in parsed.sources if not s.startswith("#")]
    assert len(images) >= 3 and all(s.startswith("data:image/png;base64,") for s in images)
    assert parsed.tags.count("script") == 2 and "<link" not in page and " src='data-" not in page
    manifest = json.loads(page.split("type='application/json'>", 1)[1].split("</script>")[0])
    assert manifest["rows"] == n_transcripts
    assert "retention_pct" in page and "SIMULATED" in page
    assert "name='viewport'" in page


def test_a_page_refits_each_rounds_keep_rule_once(sealed, tmp_path, monkeypatch):
    calls = []
    refit = explain.keep_reasons
    monkeypatch.setattr(explain, "keep_reasons",
                        lambda *args, **kw: calls.append(1) or refit(*args, **kw))
    with Run.open(sealed, read_only=True) as run:
        write(run, tmp_path)
    assert len(calls) == 1  # the decisions table and every candidate's "why kept" share it


def test_the_chunks_hold_every_transcript_once_in_the_index_order(sealed, tmp_path):
    with Run.open(sealed, read_only=True) as run:
        page_path = view.write(run, tmp_path / "page")
        index = explain.transcripts(run, text=False)
        texts = [run.transcript(ref) for ref in index["trajectory"]]
    data = next((tmp_path / "page").glob("data-*"))
    manifest = json.loads(page_path.read_text(encoding="utf-8").split(
        "type='application/json'>", 1)[1].split("</script>")[0])
    found = [t for n in range(-(-len(texts) // view_data.TEXT_ROWS))
             for t in chunk(data / f"text-{n}.js")]
    assert found == texts
    rows = [chunk(data / f"index-{n}.js") for n in range(manifest["indexChunks"])]
    books = manifest["books"]
    assert [books["candidate"][c] for r in rows for c in r["candidate"]] == \
        index["candidate"].tolist()
    assert [books["task"][c] for r in rows for c in r["task"]] == index["task_id"].tolist()
    assert [r for part in rows for r in part["repeat"]] == index["repeat"].tolist()
    outcome = [books["outcome"][c] for r in rows for c in r["outcome"]]
    assert outcome == ["passed" if p else "failed" if ok else "environment failure"
                       for p, ok in zip(index["passed"], index["infra_ok"])]
    assert all(len(first) <= view_data.FIRST_CHARS for r in rows for first in r["first"])


def test_each_candidates_changed_repeats_point_at_their_transcripts(sealed, tmp_path):
    with Run.open(sealed, read_only=True) as run:
        view.write(run, tmp_path / "page")
        index = explain.transcripts(run, text=False)
        details = explain.patch_details(run)
        trials = run.trials(split="train")
    data = next((tmp_path / "page").glob("data-*"))
    checked = 0
    for number, row in enumerate(details.itertuples()):
        if row.parent is None or pd.isna(row.parent):
            continue
        pairs = explain.paired_trials(trials, parent=row.parent, child=row.candidate,
                                      change=["fixed", "broken"])
        path = data / f"changed-{number}.js"
        assert path.exists() == bool(len(pairs))
        if not len(pairs):
            continue
        changed = chunk(path)
        assert changed["task"] == pairs["task_id"].tolist()
        for side in ("parent", "child"):
            refs = index["trajectory"].to_numpy()[changed[side]]
            assert refs.tolist() == pairs[f"trajectory_{side}"].tolist()
        checked += 1
    assert checked


def test_a_live_run_opened_read_only_renders_and_markup_stays_text(live, tmp_path):
    with Run.open(live, read_only=True) as run:
        assert run.sealed_result is None
        page = write(run, tmp_path)
    parsed = parse(page)
    assert parsed.tags.count("script") == 2  # the page's data and its script, none of the run's
    assert "onerror" not in "".join(a for a in parsed.sources)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert HOSTILE_TASK not in page and "\\u003c/script>" in page  # a task id stays in its JSON
    texts = [t for path in next(tmp_path.glob("view-*/data-*")).glob("text-*.js")
             for t in chunk(path)]
    assert any(HOSTILE in t for t in texts)  # kept exactly, set as text by the page
    assert "Not sealed yet" in page


def test_gsme_view_writes_the_folder_and_replaces_it_whole(sealed, tmp_path, capsys,
                                                           monkeypatch):
    out = tmp_path / "report"
    assert main(["view", str(sealed), "--out", str(out)]) == 0
    assert f"wrote {out / 'index.html'}" in capsys.readouterr().out
    assert (out / "index.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in out.glob("data-*")] == ["data-1"]
    assert main(["view", str(sealed), "--out", str(out), "--quiet"]) == 0
    assert [p.name for p in out.glob("data-*")] == ["data-2"]  # the old page's data is gone
    assert "data-2/" in (out / "index.html").read_text(encoding="utf-8") or \
        '"dir": "data-2"' in (out / "index.html").read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["view", str(sealed)]) == 0
    assert (tmp_path / f"{sealed.name}-view" / "index.html").exists()
    capsys.readouterr()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert main(["view", str(sealed), "--out", str(tmp_path / "mine")]) == 2
    assert "notes.txt" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert main(["view", str(tmp_path / "missing")]) == 2
    assert re.search(r"gsme: error: .*missing", capsys.readouterr().err)


def test_gsme_view_watch_rewrites_a_live_run_until_it_is_sealed(tmp_path, capsys,
                                                                monkeypatch):
    from gsme import measure

    with simulated_run("tiny", root=tmp_path, seed=2, rounds=1, finalize=False) as run:
        path = run.path
    out, written, first = tmp_path / "page", [], threading.Event()
    write_page = view.write

    def recorded(run, folder, **options):
        page = write_page(run, folder, **options)
        written.append((options["refresh"], run.sealed_result is not None))
        first.set()
        return page

    monkeypatch.setattr(view, "write", recorded)
    exits = []
    watcher = threading.Thread(
        target=lambda: exits.append(main(["view", str(path), "--out", str(out),
                                          "--watch", "0.05", "--quiet"])))
    watcher.start()
    try:
        assert first.wait(timeout=600)  # the live run's page is written before it is sealed
        with Run.open(path) as run:
            measure.finalize(run)
    finally:
        watcher.join(timeout=600)
    assert exits == [0] and not watcher.is_alive()
    assert written[0] == (0.05, False) and written[-1] == (None, True)
    assert capsys.readouterr().out.count("gsme view: wrote") == len(written) >= 2
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "http-equiv='refresh'" not in page and "Not sealed yet" not in page


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A sealed 3-round learned run on tb2 (SIMULATED) that keeps uncredited children."""
    with simulated_run("tb2", root=tmp_path_factory.mktemp("learned"), seed=0,
                       rounds=3) as run:
        path = run.path
    return path


def test_the_page_says_what_to_ship_and_why_each_child_was_kept(learned, tmp_path):
    from gsme import explain, report

    with Run.open(learned, read_only=True) as run:
        page = write(run, tmp_path)
        ship = report.run_ship_line(run)
        reasons = explain.keep_reasons(run)
    text = " ".join(parse(page).text)
    assert ship in text and "id='ship'" in page
    uncredited = reasons[reasons["kept"] & ~reasons["credited"]]
    assert len(uncredited)
    for reason in uncredited["keep_reason"]:
        assert reason in text  # in the decisions table and on the candidate's card
        assert text.count(reason) >= 2
    for label in ("Δ vs parent (pp, the decision's repeats)", "train rate (first 3 repeats)",
                  "comparisons learned from", "credit boundary (z)", "why kept (or not)"):
        assert label in text
    assert not re.search(r"\bnan\b", text, flags=re.IGNORECASE)


def test_one_harness_shows_one_train_rate_on_every_surface(learned, capsys, tmp_path):
    from gsme import explain, report, widgets

    with Run.open(learned, read_only=True) as run:
        chosen = explain.selected(run)
        rate = report.number(explain.train_rates(run).set_index("candidate").loc[chosen, "rate"])
        table = report.run_table(run).iloc[0]
        page = " ".join(parse(write(run, tmp_path)).text)
        panel = widgets.explore(run)
        panel.candidate.value = chosen
        pane = " ".join(parse(panel.patch.value).text)
        assert run.archive()["candidate"].isin([chosen]).any()
    assert report.number(table["rate_train_selected"]) == rate
    assert main(["status", str(learned)]) == 0
    status = capsys.readouterr().out
    assert f"best {chosen}: train rate {rate} (first 3 repeats of every task)" in status
    assert main(["report", str(learned)]) == 0
    assert f"rate_train_selected       {rate}" in capsys.readouterr().out
    assert f"its train rate {rate} (first k repeats" in page
    assert f"train rate {rate} (first k repeats" in pane
