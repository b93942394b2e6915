"""gsme.view and ``gsme view``: a run as one self-contained, escaped HTML page."""

import re
from html.parser import HTMLParser

import pytest

from gsme import view
from gsme.cli import main
from gsme.experiments import simulated_run
from gsme.run import Run

HOSTILE = "<script>alert('pwned')</script> & <img src=x onerror=alert(1)>"


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
        path = run.path
    return path


def test_page_holds_every_section_and_every_candidates_diff(sealed):
    with Run.open(sealed, read_only=True) as run:
        page = view.render(run)
        candidates = run.candidates()["candidate"].tolist()
        n_transcripts = run.trials()["trajectory"].dropna().nunique()
    parsed = parse(page)
    assert {"run-table", "figures", "decisions", "archive", "candidates", "transcripts",
            "search", "transcript-table"} <= parsed.ids
    for name in candidates:
        assert f"candidate-{name}" in parsed.ids
        section = page.split(f"id='candidate-{name}'", 1)[1].split("</section>", 1)[0]
        assert "class='gsme-diff'" in section and "diff --git" in section
        assert "class='gsme-add'" in section  # every candidate adds files
    # figures are embedded: no file or network is fetched
    images = [s for s in parsed.sources if not s.startswith("#")]
    assert len(images) >= 3 and all(s.startswith("data:image/png;base64,") for s in images)
    assert parsed.tags.count("script") == 1 and "<link" not in page
    assert page.count("<tr id='t-") == n_transcripts
    assert "retention_pct" in page and "SIMULATED" in page


def test_a_live_run_opened_read_only_renders_and_markup_stays_text(live):
    with Run.open(live, read_only=True) as run:
        assert run.sealed_result is None
        page = view.render(run)
    parsed = parse(page)
    assert parsed.tags.count("script") == 1  # the search box's, nothing from the run
    assert "onerror" not in "".join(a for a in parsed.sources)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in page
    assert HOSTILE in "".join(parsed.text)  # shown as text, exactly
    assert "Not sealed yet" in page


def test_gsme_view_writes_the_page(sealed, tmp_path, capsys, monkeypatch):
    out = tmp_path / "report.html"
    assert main(["view", str(sealed), "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    monkeypatch.chdir(tmp_path)
    assert main(["view", str(sealed)]) == 0
    assert (tmp_path / f"{sealed.name}.html").exists()
    assert main(["view", str(tmp_path / "missing")]) == 2
    assert re.search(r"gsme: error: .*missing", capsys.readouterr().err)


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
    """A sealed 3-round learned run on tb2 (SIMULATED) that keeps uncredited children."""
    with simulated_run("tb2", root=tmp_path_factory.mktemp("learned"), seed=0,
                       rounds=3) as run:
        path = run.path
    return path


def test_the_page_says_what_to_ship_and_why_each_child_was_kept(learned):
    from gsme import explain, report

    with Run.open(learned, read_only=True) as run:
        page = view.render(run)
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


def test_one_harness_shows_one_train_rate_on_every_surface(learned, capsys):
    from gsme import explain, report, widgets

    with Run.open(learned, read_only=True) as run:
        chosen = explain.selected(run)
        rate = report.number(explain.train_rates(run).set_index("candidate").loc[chosen, "rate"])
        table = report.run_table(run).iloc[0]
        page = " ".join(parse(view.render(run)).text)
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
