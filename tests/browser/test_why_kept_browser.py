"""The ship line and why each child was kept, on ``gsme view``'s page in a real browser.

Headless Chromium opens the page of a sealed 3-round learned run (SIMULATED, seeded) that
keeps a child the gate did not credit: the ship line is the page's first visible claim
and that child's card says why it was kept. Needs Debian's ``chromium`` and ``playwright``
(see test_explorer_browser).
"""

from __future__ import annotations

from test_explorer_browser import chromium_page, screenshot

from gsme import explain, report
from gsme.cli import main
from gsme.experiments import simulated_run


def test_the_page_shows_the_ship_line_and_why_an_uncredited_child_was_kept(tmp_path):
    with simulated_run("tb2", root=tmp_path, seed=0, rounds=3) as run:
        ship = report.run_ship_line(run)
        reasons = explain.keep_reasons(run)
        path = run.path
    uncredited = reasons[reasons["kept"] & ~reasons["credited"]].iloc[0]
    out = tmp_path / "view"
    assert main(["view", str(path), "--out", str(out)]) == 0
    with chromium_page() as page:
        page.goto((out / "index.html").as_uri())
        try:
            line = page.locator("#ship")
            assert line.is_visible() and line.inner_text() == ship
            card = page.locator(f"section#candidate-{uncredited['child']} table.gsme-gate")
            assert uncredited["keep_reason"] in card.inner_text()
            assert card.inner_text().count("kept without a credit") == 1
        except Exception:
            screenshot(page, tmp_path, "why-kept-failure")
            raise
