"""``gsme view`` at scale: build time and memory, page size, first load and search latency.

Builds the ``tb2`` demo run (seed 0, 5 rounds, sealed; SIMULATED), then larger copies of it
(:func:`inflate`: its train trials repeated under new repeat numbers, each with its own
copy of the transcript, until the ledger holds N trials; the decisions stay the run's, so
only the page's size changes), and for each size writes the page in a fresh process
(its CPU seconds and peak memory) and opens it in headless Chromium (first load: until
the first transcript rows are drawn; search: from the last keystroke to the rows drawn,
the page's own ``data-search-ms``, for three queries typed a letter at a time).

    python benchmarks/bench_view.py [--trials 12000 ...] [--million] [--quick]

Targets (issue 31, on an idle machine): at 12,000 trials the first load <= 2 s, the
initial HTML <= 1.5 MB, search <= 200 ms per keystroke, the build <= 10 s; at 1,000,000
trials the build's memory <= 1 GB and the first load as at 12,000. ``--quick``: the ``tiny``
preset at 2,000 trials, no browser.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"first load (s)": 2.0, "index.html (MB)": 1.5, "search per keystroke (ms)": 200,
           "build (CPU s)": 10.0, "build memory (MB)": 1024}
QUERIES = ("c0003", "fail", "tb2-01")


def inflate(run: Path, out: Path, trials: int) -> int:
    """Copy the run at ``run`` to ``out`` and repeat its own train trials there (repeat
    numbers shifted by 1000 per copy, each copy with its transcripts) until ``out``'s
    ledger holds ``trials`` trials; return how many it holds."""
    shutil.copytree(run, out)
    db = sqlite3.connect(out / "ledger.sqlite")
    columns = [row[1] for row in db.execute("PRAGMA table_info(trials)")]
    have, copy = db.execute("SELECT count(*) FROM trials").fetchone()[0], 1
    while have < trials:
        chosen = ", ".join(
            f'"repeat" + {1000 * copy}' if c == "repeat" else
            f"trajectory || '~{copy}'" if c == "trajectory" else f'"{c}"' for c in columns)
        names = ", ".join(f'"{c}"' for c in columns)
        own = "split = 'train' AND \"repeat\" < 1000 AND borrowed_from IS NULL"
        db.execute(f"INSERT INTO trials ({names}) SELECT {chosen} FROM trials WHERE {own} "
                   f"AND trajectory IS NOT NULL LIMIT {trials - have}")
        db.execute(f"INSERT INTO transcripts (ref, text) SELECT ref || '~{copy}', text "
                   f"FROM transcripts WHERE ref IN (SELECT trajectory FROM trials WHERE {own})")
        have, copy = db.execute("SELECT count(*) FROM trials").fetchone()[0], copy + 1
    db.commit()
    db.close()
    return have


_BUILD = """
import json, resource, sys, time
from gsme.run import Run
from gsme import view
with Run.open(sys.argv[1], read_only=True) as run:
    view.write(run, sys.argv[2])
use = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": use.ru_utime + use.ru_stime, "rss_mb": use.ru_maxrss / 1024}))
"""


def build(run: Path, folder: Path) -> dict:
    """Write ``run``'s page into ``folder`` in a fresh process: its CPU seconds and peak
    memory (MB), and the page's sizes."""
    done = subprocess.run([sys.executable, "-c", _BUILD, str(run), str(folder)],
                          capture_output=True, text=True, check=True)
    figures = json.loads(done.stdout.splitlines()[-1])
    data = next(folder.glob("data-*"))
    figures["html_mb"] = (folder / "index.html").stat().st_size / 1e6
    figures["data_mb"] = sum(p.stat().st_size for p in data.iterdir()) / 1e6
    figures["chunks"] = sum(1 for _ in data.iterdir())
    return figures


def browse(page_path: Path) -> dict:
    """First load and search latency of the page in headless Chromium (None without it)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
    try:
        from test_explorer_browser import chromium_page
        with chromium_page(width=1440, height=900) as page:
            start = time.perf_counter()
            page.goto(page_path.as_uri())
            page.wait_for_function(
                "document.querySelectorAll('#transcript-table tbody tr').length > 0")
            first = time.perf_counter() - start
            searches = []
            for query in QUERIES:
                page.fill("#search", "")
                page.wait_for_function("!document.getElementById('search-count')"
                                       ".textContent.includes('in all')")
                for letters in range(1, len(query) + 1):
                    page.evaluate("delete document.getElementById('transcript-table')"
                                  ".dataset.searchMs")
                    page.fill("#search", query[:letters])
                    searches.append(float(page.wait_for_function(
                        "document.getElementById('transcript-table').dataset.searchMs"
                    ).json_value()))
        return {"first_s": first, "search_ms": statistics.median(searches),
                "search_max_ms": max(searches)}
    except Exception as error:  # noqa: BLE001 - no browser here: the build's figures stand
        print(f"(no browser figures: {type(error).__name__}: {error})")
        return {}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[12_000])
    parser.add_argument("--million", action="store_true", help="add a 1,000,000-trial run")
    parser.add_argument("--quick", action="store_true", help="tiny preset, 2,000 trials")
    args = parser.parse_args(argv)
    preset, sizes = ("tiny", [2_000]) if args.quick else ("tb2", args.trials)
    sizes = sizes + [1_000_000] * args.million

    from gsme.experiments import simulated_run

    rows = []
    with tempfile.TemporaryDirectory() as root:
        root = Path(root)
        with simulated_run(preset, root=root, seed=0, rounds=1 if args.quick else 5) as run:
            source = run.path
        for size in sizes:
            run = root / f"run-{size}"
            held = inflate(source, run, size)
            figures = build(run, root / f"view-{size}")
            if not args.quick:
                figures |= browse(root / f"view-{size}" / "index.html")
            rows.append((held, figures))
            shutil.rmtree(run)
            print(f"  {held:,} trials done", flush=True)
    print(f"SIMULATED run: {preset}, seed 0, copied up to each size (gsme view at scale)")
    print(f"{'trials':>10} {'build CPU s':>12} {'build MB':>9} {'index.html MB':>14} "
          f"{'data MB':>8} {'chunks':>7} {'first load s':>13} {'search ms':>10} {'max ms':>7}")
    for held, f in rows:
        print(f"{held:>10,} {f['cpu']:>12.1f} {f['rss_mb']:>9.0f} {f['html_mb']:>14.2f} "
              f"{f['data_mb']:>8.1f} {f['chunks']:>7} {f.get('first_s', float('nan')):>13.2f} "
              f"{f.get('search_ms', float('nan')):>10.0f} "
              f"{f.get('search_max_ms', float('nan')):>7.0f}")
    twelve = next((f for held, f in rows if held == 12_000), None)
    if twelve is not None:
        for name, value in (("first load (s)", twelve.get("first_s")),
                            ("index.html (MB)", twelve["html_mb"]),
                            ("search per keystroke (ms)", twelve.get("search_ms")),
                            ("build (CPU s)", twelve["cpu"])):
            _target(f"12,000 trials: {name}", value, TARGETS[name])
    million = next((f for held, f in rows if held >= 1_000_000), None)
    if million is not None:
        _target("1,000,000 trials: build memory (MB)", million["rss_mb"],
                TARGETS["build memory (MB)"])
        if twelve is not None and "first_s" in million:
            _target("1,000,000 trials: first load (s)", million["first_s"], TARGETS["first load (s)"])
            print(f"index.html at 1,000,000 vs 12,000 trials: {million['html_mb']:.2f} vs "
                  f"{twelve['html_mb']:.2f} MB")
    if args.quick:
        _target("2,000 trials: index.html (MB)", rows[0][1]["html_mb"], TARGETS["index.html (MB)"])


def _target(name: str, value, target) -> None:
    verdict = "no figure" if value is None else "met" if value <= target else "MISSED"
    shown = "n/a" if value is None else f"{value:.2f}"
    print(f"target: {name} {shown} <= {target}: {verdict}")


if __name__ == "__main__":
    main()
