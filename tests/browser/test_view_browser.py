"""``gsme view``'s page in a real browser: headless Chromium opens the file itself.

Checks that the page renders its figures from embedded data, that every candidate's
section shows a marked-up diff, that typing in the search box leaves only the transcripts
holding the text (and opens them), and that a transcript holding markup shows as text.
Needs Debian's ``chromium`` and the ``playwright`` package (see test_explorer_browser).
"""

from __future__ import annotations

from pathlib import Path

from test_explorer_browser import chromium_page, screenshot

from gsme.cli import main
from gsme.experiments import simulated_run

HOSTILE = "<script>window.pwned = true</script>"


def make_page(root: Path) -> tuple[Path, list[str], str]:
    """Write the page of a tiny live run holding one hostile transcript; return its path,
    the candidates and a line that only that transcript holds."""
    with simulated_run("tiny", root=root, seed=0, rounds=1, finalize=False) as run:
        row = run.trials(split="train").iloc[0].to_dict()
        row.update(repeat=99, attempt=0, trajectory="train/hostile/r99a0")
        marker = "needle-line-7f3a"
        run.trial_sink().record_trials([(row, f"{marker}\n{HOSTILE}\n")])
        candidates = run.candidates()["candidate"].tolist()
        path = run.path
    out = root / "view.html"
    assert main(["view", str(path), "--out", str(out)]) == 0
    return out, candidates, marker


def test_view_page_renders_diffs_and_searches_transcripts(tmp_path):
    page_path, candidates, marker = make_page(tmp_path)
    with chromium_page() as page:
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        try:
            check(page, candidates, marker)
        except Exception:
            screenshot(page, tmp_path, "view-failure")
            raise
        screenshot(page, tmp_path, "view")
    assert all(u.startswith(("file:", "data:")) for u in requests), requests


def check(page, candidates: list[str], marker: str) -> None:
    # every figure decoded and drawn from its embedded PNG
    sizes = page.eval_on_selector_all(
        "figure img", "(imgs) => imgs.map((i) => [i.complete, i.naturalWidth])")
    assert len(sizes) >= 3 and all(done and width > 300 for done, width in sizes), sizes
    # every candidate has a section with a diff whose added lines are marked
    for name in candidates:
        section = page.locator(f"section#candidate-{name}")
        assert section.locator("pre.gsme-diff").inner_text().startswith("diff --git")
        assert section.locator("pre.gsme-diff span.gsme-add").count() > 0
        assert section.locator("table.gsme-gate").count() == 1
    rows = page.locator("#transcript-table tbody tr")
    total = rows.count()
    assert total > 50
    # search: only the hostile transcript holds the marker; it is shown and opened
    page.fill("#search", marker)
    page.wait_for_function("(n) => document.querySelectorAll("
                           "'#transcript-table tbody tr:not([hidden])').length === n", arg=1)
    assert page.locator("#search-count").inner_text() == f"1 of {total} transcripts"
    hit = page.locator("#transcript-table tbody tr:not([hidden]) pre.gsme-transcript")
    assert hit.is_visible()
    text = hit.inner_text()
    assert marker in text and HOSTILE in text  # the markup is text on the page
    assert page.evaluate("() => window.pwned") is None
    assert page.locator("script").count() == 1
    page.fill("#search", "")
    page.wait_for_function("(n) => document.querySelectorAll("
                           "'#transcript-table tbody tr:not([hidden])').length === n",
                           arg=total)
