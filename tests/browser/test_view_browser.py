"""``gsme view``'s page in a real browser: headless Chromium opens the folder's page itself.

Checks, at a phone's width (390 px) and a desktop's (1440 px): the figures are drawn from
embedded data, every candidate's section shows a marked-up diff, the page fits the width
with readable text and prints no ``nan``; the transcript table starts from one index chunk
and no transcript; a search finds the one transcript holding a marker without opening it
(and without loading any text), opening it loads its text and shows a transcript holding
markup as text; a candidate's changed repeats link to their transcripts; sorting orders
the rows. Then the budget of a 12,000-trial page. Needs Debian's ``chromium`` and the
``playwright`` package (see test_explorer_browser).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_explorer_browser import chromium_page, screenshot

from gsme.cli import main
from gsme.experiments import simulated_run

HOSTILE = "<script>window.pwned = true</script>"
MARKER = "needle-line-7f3a"
SEARCH_MS = 1_000
"""A generous bound on one search in a test under load (benchmarks/bench_view.py measures
the 200 ms target)."""


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> tuple[Path, list[str]]:
    """The page of a tiny live run holding one hostile transcript; its path and candidates."""
    root = tmp_path_factory.mktemp("view")
    with simulated_run("tiny", root=root, seed=0, rounds=1, finalize=False) as run:
        row = run.trials(split="train").iloc[0].to_dict()
        row.update(repeat=99, attempt=0, trajectory="train/hostile/r99a0")
        run.trial_sink().record_trials([(row, f"{MARKER}\n{HOSTILE}\n")])
        candidates = run.candidates()["candidate"].tolist()
        path = run.path
    assert main(["view", str(path), "--out", str(root / "page"), "--quiet"]) == 0
    return root / "page" / "index.html", candidates


@pytest.mark.parametrize("width", [390, 1440])
def test_view_page_at_a_phones_and_a_desktops_width(made, width, tmp_path):
    page_path, candidates = made
    with chromium_page(width=width, height=900) as page:
        requests, errors = [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        try:
            check_layout(page, width)
            check_sections(page, candidates)
            check_transcripts(page, requests)
            check_changed_links(page)
        except Exception:
            screenshot(page, tmp_path, f"view-{width}-failure")
            raise
        screenshot(page, tmp_path, f"view-{width}")
    assert not errors, errors
    assert all(u.startswith(("file:", "data:")) for u in requests), requests


def check_layout(page, width: int) -> None:
    page.wait_for_function("document.querySelectorAll('#transcript-table tbody tr').length")
    assert page.locator("meta[name=viewport]").count() == 1
    # the page fits the width: wide tables scroll inside their own box
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    smallest = page.evaluate("""() => Math.min(...Array.from(
        document.querySelectorAll('p, td, th, summary, pre, li, figcaption'))
        .filter((e) => e.offsetParent !== null && e.textContent.trim())
        .map((e) => parseFloat(getComputedStyle(e).fontSize)))""")
    assert smallest >= 12, smallest
    words = page.locator("body").inner_text().lower().split()
    assert "nan" not in words and "none" not in words


def check_sections(page, candidates: list[str]) -> None:
    sizes = page.eval_on_selector_all(
        "figure img", "(imgs) => imgs.map((i) => [i.complete, i.naturalWidth])")
    assert len(sizes) >= 3 and all(done and w > 300 for done, w in sizes), sizes
    for name in candidates:
        section = page.locator(f"section#candidate-{name}")
        assert section.locator("pre.gsme-diff").inner_text().startswith("diff --git")
        assert section.locator("pre.gsme-diff span.gsme-add").count() > 0
        assert section.locator("table.gsme-gate").count() == 1


def check_transcripts(page, requests: list[str]) -> None:
    rows = page.locator("#transcript-table tbody tr")
    assert rows.count() == 100  # the first page of rows, from the first index chunk
    total = int(page.locator("#search-count").inner_text().split(" of ")[1].split()[0]
                .replace(",", ""))
    assert total > 100
    assert [u.rsplit("/", 1)[1] for u in requests if u.endswith(".js")] == ["index-0.js"]
    # a search shows the one transcript holding the marker, opens nothing, loads no text
    page.fill("#search", MARKER)
    ms = page.wait_for_function(
        "document.getElementById('transcript-table').dataset.searchMs").json_value()
    assert float(ms) < SEARCH_MS
    assert page.locator("#search-count").inner_text() == f"1–1 of 1 transcripts ({total:,} in all)"
    assert rows.count() == 1 and page.locator("#transcript-table details[open]").count() == 0
    assert not [u for u in requests if "/text-" in u]
    assert MARKER in rows.first.inner_text()  # its first line, from the index
    # opening it loads its text: the markup is text on the page, and never ran
    rows.first.locator("summary").click()
    text = page.locator("#transcript-table pre.gsme-transcript")
    page.wait_for_function(
        "document.querySelector('#transcript-table pre.gsme-transcript').textContent"
        ".includes('pwned')")
    assert HOSTILE in text.inner_text()
    assert page.evaluate("() => window.pwned") is None
    assert [u for u in requests if "/text-" in u]
    # filters and sorting: the failed transcripts, sorted by task and then the other way
    page.fill("#search", "")
    page.select_option("select[data-filter=outcome]", label="failed")
    page.wait_for_function("document.getElementById('search-count').textContent.includes('in all')")
    outcomes = page.eval_on_selector_all("#transcript-table tbody tr td:nth-child(6)",
                                         "(cells) => cells.map((c) => c.textContent)")
    assert outcomes and set(outcomes) == {"failed"}
    for order in ("ascending", "descending"):
        page.locator("th[data-column=task]").click()
        page.wait_for_function(f"document.querySelector('th[data-column=task]')"
                               f".getAttribute('aria-sort') === '{order}'")
        page.wait_for_function("(o) => { const t = Array.from(document.querySelectorAll("
                               "'#transcript-table tbody tr td:nth-child(2)'), "
                               "(c) => c.textContent); const s = [...t].sort(); "
                               "if (o === 'descending') s.reverse(); "
                               "return t.join() === s.join(); }", arg=order)
    page.select_option("select[data-filter=outcome]", index=0)


def check_changed_links(page) -> None:
    changed = page.locator("details[data-changed]").first
    changed.locator("summary").click()
    link = changed.locator("tbody a").first
    link.wait_for()
    task = changed.locator("tbody tr").first.locator("td").first.inner_text()
    link.click()
    page.wait_for_function("document.getElementById('search-count').textContent"
                           ".startsWith('1–1 of 1')")
    shown = page.locator("#transcript-table tbody tr")
    assert shown.count() == 1 and shown.locator("td").nth(1).inner_text() == task
    page.wait_for_function("document.querySelector('#transcript-table pre').textContent"
                           ".startsWith('task:')")
    page.locator("#show-all").click()
    page.wait_for_function("document.querySelectorAll('#transcript-table tbody tr').length"
                           " === 100")


def test_a_12000_trial_page_keeps_its_budget(tmp_path):
    """The initial page stays under 1.5 MB and its first load reads one index chunk and no
    transcript, whatever the run's size (SIMULATED, a tiny run copied up to 12,000 trials)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from bench_view import inflate

    with simulated_run("tiny", root=tmp_path, seed=0, rounds=1) as run:
        source = run.path
    assert inflate(source, tmp_path / "big", 12_000) == 12_000
    assert main(["view", str(tmp_path / "big"), "--out", str(tmp_path / "page"),
                 "--quiet"]) == 0
    page_path = tmp_path / "page" / "index.html"
    assert page_path.stat().st_size <= 1_500_000
    with chromium_page(width=1440, height=900) as page:
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_function("document.querySelectorAll('#transcript-table tbody tr')"
                               ".length === 100")
        assert [u.rsplit("/", 1)[1] for u in requests if u.endswith(".js")] == ["index-0.js"]
        manifest = page.evaluate("JSON.parse(document.getElementById('gsme-data').textContent)")
        assert manifest["rows"] > 11_000 and manifest["indexChunks"] >= 3
        assert page.locator("#search-count").inner_text() == \
            f"1–100 of {manifest['rows']:,} transcripts"
        # a search is asked for: it loads every index chunk, and still no transcript
        page.fill("#search", "tiny-00")
        ms = page.wait_for_function(
            "document.getElementById('transcript-table').dataset.searchMs").json_value()
        assert float(ms) < SEARCH_MS
        loaded = {u.rsplit("/", 1)[1] for u in requests if u.endswith(".js")}
        assert loaded == {f"index-{n}.js" for n in range(manifest["indexChunks"])}
