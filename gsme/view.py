"""A run as a page in one folder: ``gsme view DIR`` writes it.

The page needs no server and no network: figures are embedded as base64 PNG, the styles
and the script are inline, and the transcripts wait in compressed chunks beside it
(:mod:`gsme.view_data`) that the page loads when asked, so its first load and its build's
memory do not grow with the run. Every text from the run (transcripts, rationales, diffs,
ids) is HTML-escaped or set as text: a transcript holding ``<script>`` shows as text. The
patch and side-by-side fragments are shared with the explorer (:mod:`gsme.widgets`), so
both show a candidate the same way.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import shutil
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tqdm.auto import tqdm

from gsme import archive, explain, plot, report, view_data

__all__ = ["ViewError", "diff_html", "pair_html", "patch_html", "write"]


class ViewError(FileExistsError):
    """The folder asked for holds something else than a page ``gsme view`` wrote.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from gsme.experiments import simulated_run
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "notes.txt").write_text("mine")
    >>> run = simulated_run("tiny", rounds=1, finalize=False)  # SIMULATED
    >>> try:
    ...     write(run, folder)
    ... except ViewError as error:
    ...     print(str(error).split(" holds ")[1])
    notes.txt, not only a page gsme view wrote: choose another --out
    >>> run.close()
    """

#: Inline styles of the fragments (inline, so that notebook front ends that drop
#: ``<style>`` blocks still show them).
STYLES = {
    "add": "color:#005a2b;background:#e6f4ea",
    "del": "color:#8a1f11;background:#fde8e4",
    "hunk": "color:#5a4a9c",
    "file": "font-weight:bold",
    "pre": ("font-family:monospace;font-size:12px;line-height:1.35;white-space:pre-wrap;"
            "word-break:break-word;max-height:28em;overflow:auto;margin:0;padding:6px;"
            "background:#fafafa;border:1px solid #ddd"),
    "table": "border-collapse:collapse;font-size:13px",
    "cell": "text-align:left;vertical-align:top;padding:2px 8px;border-bottom:1px solid #eee",
}
_CHANGE_WORDS = {"fixed": "fixed (parent failed, child passed)",
                 "broken": "broken (parent passed, child failed)",
                 "both_failed": "both failed", "both_passed": "both passed",
                 "invalid": "environment failure", "unpaired": "one side only"}


def write(run, folder, *, split: str = "train", refresh: float | None = None,
          progress: bool = False) -> Path:
    """Write the run's page into ``folder`` (made if missing); return its ``index.html``.

    The folder holds the page and one data folder of chunks it loads on demand (the
    transcripts, their index, each candidate's changed trials: see :mod:`gsme.view_data`),
    so the page opens as fast for a million trials as for a thousand, from disk, offline.
    Writing again replaces the page at once (a browser never sees half of one) and removes
    the data of the page it replaced.

    Parameters
    ----------
    run : gsme.run.Run
        A live (open read-only) or sealed run.
    folder : path-like
        Where to write; a folder that holds anything but an earlier page is refused.
    split : {"train", "test"}
        The split whose decisions and paired trials are shown.
    refresh : float, optional
        Seconds after which an open page reloads itself (``gsme view --watch``).
    progress : bool
        Show a progress bar (on stderr) while the transcripts are written.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1)  # SIMULATED
    >>> page = write(run, "run-view")
    >>> page.name, page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    ('index.html', True)
    >>> run.close()
    """
    folder = _page_folder(Path(folder))
    done = sorted(folder.glob("data-*"))
    data = folder / f"data-{1 + max((_build(d) for d in done), default=0)}"
    data.mkdir()
    index = explain.transcripts(run, text=False)
    books = view_data.Dictionaries(index)
    with tqdm(total=len(index), desc="gsme view: transcripts", unit="transcript",
              disable=None if progress else True, file=sys.stderr, leave=False) as bar:
        index_chunks = view_data.write_transcripts(run, index, data, books, bar=bar)
    rows = pd.Series(np.arange(len(index)), index=index["trajectory"].to_numpy())
    del index  # a million rows: the page's other parts need only where each transcript is
    manifest = {"dir": data.name, "rows": len(rows), "indexChunks": index_chunks,
                "indexRows": view_data.INDEX_ROWS, "textRows": view_data.TEXT_ROWS,
                "books": books.values}
    page = _render(run, split=split, rows=rows, data=data, manifest=manifest,
                   refresh=refresh)
    partial = folder / "index.html.part"
    partial.write_text(page, encoding="utf-8")
    os.replace(partial, folder / "index.html")
    for old in done:
        shutil.rmtree(old, ignore_errors=True)
    return folder / "index.html"


def _render(run, *, split: str, rows: pd.Series, data: Path, manifest: dict,
            refresh: float | None) -> str:
    """The page: run table, figures, decisions, archive, lineage, every candidate's patch
    (its changed trials written to ``data``) and the transcript table."""
    decisions = explain.keep_reasons(run, split=split)
    details = explain.patch_details(run, split=split, reasons=decisions)
    chosen = explain.selected(run)
    sealed = run.sealed_result is not None
    table = report.run_table(run) if sealed else None
    ship = report.ship_line(report.recommendation(table) if sealed else None)
    trials = run.trials(split=split)
    simulated = bool(run.agent.simulated)
    title = f"gsme run {run.path.name}"
    parts = [
        f"<h1>{_e(title)}</h1>",
        "<p class='simulated'><strong>SIMULATED</strong> agent: every figure and table "
        "comes from the embedded simulator.</p>" if simulated else "",
        f"<p class='ship' id='ship'><strong>{_e(ship)}</strong></p>",
        _kv_table({"directory": str(run.path), "agent": run.agent.name,
                   "policy / gate": f"{run.config.policy} / {run.config.gate.design}",
                   "rounds done": run.rounds_done(), "trials spent": run.trials_spent(),
                   "sealed": "yes" if sealed else "no (a live or unfinished run)",
                   "selected harness": chosen,
                   "its train rate": _rate_words(details, chosen)},
                  cls="meta"),
        "<h2 id='run-table'>Run table</h2>",
        "<p>Rates, Δ and pass@k: the selected harness and the baseline over the first "
        f"{run.config.gate.k} repeats of every task; Δ = selected − baseline; p one-sided.</p>"
        + _frame_table(table.T.reset_index().set_axis(["", "value"], axis=1), cls="run-table")
        if sealed else "<p>Not sealed yet: the run table exists once the test split is "
                       "scored (<code>gsme resume DIR</code> finishes the run).</p>",
        "<h2 id='figures'>Figures</h2>",
        _figures(run, decisions, table, simulated),
        "<h2 id='decisions'>Decisions</h2>",
        f"<p>Policy {_e(run.config.policy)}: each child against its parent, Δ on the repeats "
        "its decision read; expected Δ: its true effect under the proposal mix learned "
        f"then ({int(explain.INTERVAL * 100)}% interval), set against worth_pp. "
        "Click a column to sort.</p>",
        "<p class='controls'><input type='search' data-filters='decisions-table' "
        "placeholder='filter decisions' aria-label='filter decisions'></p>",
        _frame_table(decisions[list(_DECISION_LABELS)].rename(columns=_DECISION_LABELS),
                     cls="decisions", id="decisions-table"),
        "<h2 id='archive'>Archive</h2>",
        _frame_table(explain.archive_table(run).rename(columns=_archive_labels(
            run.config.gate.k)), cls="archive"),
        "<h2 id='candidates'>Candidates</h2>",
        *(_candidate_section(number, row, trials, split, chosen, rows, data)
          for number, row in enumerate(details.itertuples())),
        "<h2 id='transcripts'>Transcripts</h2>",
        _transcripts(manifest),
    ]
    return _page(title, "\n".join(p for p in parts if p), manifest, refresh)


def patch_html(row) -> str:
    """One candidate's patch detail (a row of :func:`gsme.explain.patch_details`) as an
    HTML fragment: parent, where × why, env gate, beacon, activation, decision, rationale
    and the diff.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, policy="greedy")
    >>> details = explain.patch_details(run, candidates=["c0001"])
    >>> html = patch_html(next(details.itertuples()))
    >>> html.startswith("<div class='gsme-patch' data-candidate='c0001'>")
    True
    >>> run.close()
    """
    gate = {
        "parent": _text(row.parent), "kind": f"{row.kind}, round {row.round}",
        "where × why": f"{_text(row.where)} × {_text(row.why)}",
        "patch": _text(row.patch_id), "env gate": _text(row.env_gate, "(every task)"),
        "beacon": _text(row.beacon),
        "activation": "n/a" if pd.isna(row.activation_rate) else
        f"{row.activation_rate:.0%} of {row.n_trials} trials",
        "decision": _text(row.decision, "undecided"),
        "z / p (one-sided)": "n/a" if pd.isna(row.z) else
        f"{report.number(row.z, signed=True)} / {report.number(row.p_one_sided, p=True)}",
        "Δ vs parent (pp, the decision's repeats)": report.number(row.delta_pp, signed=True),
        "kept": "n/a" if pd.isna(row.kept) else ("yes" if row.kept else "no"),
        "why kept": _text(row.keep_reason, "undecided"),
        "train rate": _rate_words(row),
    }
    return (f"<div class='gsme-patch' data-candidate='{_e(row.candidate)}'>"
            f"{_kv_table(gate, cls='gsme-gate')}"
            f"<p class='gsme-rationale'><strong>rationale:</strong> {_e(_text(row.rationale))}"
            f"</p>{diff_html(row.diff)}</div>")


def diff_html(diff: str) -> str:
    """A unified diff as a ``<pre class='gsme-diff'>``, added and removed lines marked.

    Examples
    --------
    >>> html = diff_html("--- a/notes.md\\n+++ b/notes.md\\n-old\\n+new")
    >>> html.startswith("<pre class='gsme-diff'"), html.count("class='gsme-add'")
    (True, 1)
    """
    lines = []
    for line in diff.splitlines():
        kind = ("file" if line.startswith(("diff --git", "+++ ", "--- ")) else
                "add" if line.startswith("+") else "del" if line.startswith("-") else
                "hunk" if line.startswith("@@") else None)
        text = _e(line)
        lines.append(text if kind is None else
                     f"<span class='gsme-{kind}' style='{STYLES[kind]}'>{text}</span>")
    body = "\n".join(lines) if lines else "(no change to the harness files)"
    return f"<pre class='gsme-diff' style='{STYLES['pre']}'>{body}</pre>"


def pair_html(row, *, parent: str, child: str, texts) -> str:
    """One row of :func:`gsme.explain.paired_trials` as the parent's and the child's
    transcripts side by side; ``texts(ref)`` returns a transcript's text (``run.transcript``).

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1, policy="greedy")
    >>> pairs = explain.paired_trials(run.trials(), parent="baseline", child="c0001")
    >>> html = pair_html(next(pairs.itertuples()), parent="baseline", child="c0001",
    ...                  texts=run.transcript)
    >>> html.count("task: ")
    4
    >>> run.close()
    """
    cells = []
    for side, name in (("parent", parent), ("child", child)):
        passed, ref = getattr(row, f"passed_{side}"), getattr(row, f"trajectory_{side}")
        if pd.isna(passed):
            head, text = "no such repeat", ""
        else:
            label = getattr(row, f"pathology_{side}")
            head = ("passed" if passed else "failed") + (
                "" if pd.isna(label) or not label else f" · {label}")
            borrowed = getattr(row, f"borrowed_from_{side}")
            head += "" if pd.isna(borrowed) else f" · borrowed from {borrowed}"
            text = "(no transcript)" if pd.isna(ref) else texts(ref)
        head = (f"<th class='gsme-side-{side}' style='{STYLES['cell']}'>{side} {_e(name)}: "
                f"{_e(head)}</th>")
        body = (f"<td class='gsme-side-{side}' style='{STYLES['cell']};width:50%'>"
                f"<pre class='gsme-transcript' style='{STYLES['pre']}'>{_e(text)}</pre></td>")
        cells.append((head, body))
    caption = (f"{_e(row.task_id)} repeat {int(row.repeat)}: "
               f"{_e(_CHANGE_WORDS[row.change])}")
    return (f"<table class='gsme-sides' style='{STYLES['table']};width:100%;"
            f"table-layout:fixed'><caption style='text-align:left'>{caption}</caption>"
            f"<tr>{cells[0][0]}{cells[1][0]}</tr><tr>{cells[0][1]}{cells[1][1]}</tr></table>")


# ---------------------------------------------------------------------- the page's parts

def _candidate_section(number: int, row, trials: pd.DataFrame, split: str, chosen: str,
                       rows: pd.Series, data: Path) -> str:
    mark = " <span class='badge'>selected harness</span>" if row.candidate == chosen else ""
    parts = [f"<section class='candidate' id='candidate-{_e(row.candidate)}'>",
             f"<h3>{_e(row.candidate)}{mark}</h3>", patch_html(row)]
    if row.parent is not None and not pd.isna(row.parent):
        both = trials[trials["candidate"].isin([row.parent, row.candidate])]
        pairs = explain.paired_trials(both, parent=row.parent, child=row.candidate,
                                      split=split, change=["fixed", "broken"])
        if len(pairs):
            view_data.write_changed(data, number, pairs, rows)
            parts.append(
                f"<details class='changed' data-changed='{number}'><summary>{len(pairs)} "
                f"repeat(s) that changed from {_e(row.parent)} ({split})</summary>"
                "<div class='changed-rows scroll'><p class='loading muted'>loading…</p>"
                f"<table style='{STYLES['table']}'><thead><tr><th>task</th><th>repeat</th>"
                "<th>change</th><th>parent</th><th>child</th></tr></thead><tbody></tbody>"
                "</table></div></details>")
        else:
            parts.append(f"<p>No repeat changed outcome from {_e(row.parent)} ({split}).</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _transcripts(manifest: dict) -> str:
    """The transcript table's frame: its rows are drawn by the page's script, a page of
    100 at a time, from the index chunks."""
    def options(book: str, what: str) -> str:
        values = manifest["books"][book]
        return (f"<select data-filter='{book}' aria-label='{what}'><option value=''>every "
                f"{what}</option>" + "".join(f"<option value='{i}'>{_e(v or '(none)')}</option>"
                                            for i, v in enumerate(values)) + "</select>")

    heads = "".join(f"<th data-column='{c}'>{c}</th>" for c in
                    ("candidate", "task", "split", "repeat", "attempt", "outcome", "pathology"))
    return (
        "<p>Search matches each transcript's candidate, task, split, outcome, pathology and "
        "first line (tick the box to search the whole texts: it loads them all); click a "
        "column to sort, a row to read its transcript.</p>"
        "<div class='controls'><input id='search' type='search' "
        "placeholder='search transcripts' aria-label='search transcripts' autocomplete='off'>"
        "<label><input id='search-texts' type='checkbox'> whole texts</label>"
        f"{options('candidate', 'candidate')}{options('split', 'split')}"
        f"{options('outcome', 'outcome')}</div>"
        "<p class='pager'><button id='page-prev' type='button'>‹ previous</button> "
        f"<span id='search-count'>{manifest['rows']:,} transcripts</span> "
        "<button id='page-next' type='button'>next ›</button> "
        "<button id='show-all' type='button' hidden>show every transcript</button></p>"
        f"<div class='scroll'><table id='transcript-table' style='{STYLES['table']}'>"
        f"<thead><tr>{heads}<th>transcript (first line)</th></tr></thead>"
        "<tbody></tbody></table></div>")


def _figures(run, decisions: pd.DataFrame, table, simulated: bool) -> str:
    tag = "SIMULATED: " if simulated else ""
    whys = explain.why_levels(run)
    elites = explain.archive_table(run)
    figures = []
    fig, ax = _figure(9, 3.6)
    if len(decisions):
        plot.z_forest(decisions, labels=True, boundary="boundary", kept="kept", ax=ax,
                      title=f"{tag}decisions by round (ringed: kept)")
    figures.append(("z forest", fig))
    fig, axes = _figure(9, 3.4, ncols=2, width_ratios=[1.6, 1])
    plot.occupancy(archive.occupancy(elites, why_levels=whys),
                   names=explain.elite_names(elites, why_levels=whys),
                   credited=archive.occupancy(elites, why_levels=whys, value="credited"),
                   ax=axes[0], title=f"{tag}archive")
    plot.archive_progress(explain.archive_progress(run), ax=axes[1],
                          title="archive by round")
    figures.append(("archive", fig))
    fig, ax = _figure(9, 3.8)
    plot.lineage(run.candidates(), run.decisions(), ax=ax, title=f"{tag}lineage")
    figures.append(("lineage", fig))
    if table is not None:
        fig, ax = _figure(4.5, 3.6)
        plot.retention(table, label="selected", ax=ax, title=f"{tag}train vs sealed Δ")
        figures.append(("retention", fig))
    return "\n".join(f"<figure class='figure' id='figure-{name.replace(' ', '-')}'>"
                     f"<img alt='{_e(name)}' src='data:image/png;base64,{_png(fig)}'>"
                     f"<figcaption>{_e(name)}</figcaption></figure>" for name, fig in figures)


def _figure(width: float, height: float, **grid):
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, (fig.subplots(1, grid.pop("ncols"), **grid) if grid else fig.subplots())


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _kv_table(values: dict, *, cls: str) -> str:
    body = "".join(f"<tr><th style='{STYLES['cell']}'>{_e(k)}</th>"
                   f"<td style='{STYLES['cell']}'>{_e(v)}</td></tr>" for k, v in values.items())
    return f"<table class='{cls}' style='{STYLES['table']}'>{body}</table>"


def _frame_table(frame: pd.DataFrame, *, cls: str, id: str | None = None) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in frame.columns)
    p_column = [_is_p(str(c)) for c in frame.columns]
    body = "".join("<tr>" + "".join(f"<td>{_e(_cell(v, p=p or _is_p(str(row[0]))))}</td>"
                                    for v, p in zip(row, p_column)) + "</tr>"
                   for row in frame.itertuples(index=False))
    ident = "" if id is None else f" id='{id}'"
    return (f"<div class='scroll'><table class='{cls} sortable'{ident} "
            f"style='{STYLES['table']}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table></div>")


def _cell(value, *, p: bool = False) -> str:
    """A table cell as :func:`gsme.report.number` writes it (the one formatter)."""
    return report.number(value, p=p) if not isinstance(value, str) else value


def _rate_words(row, chosen=None) -> str:
    """A candidate's train rate and its Δ vs the baseline (of :func:`gsme.explain.train_rates`),
    from a row of :func:`gsme.explain.patch_details` (or the frame and a candidate)."""
    if chosen is not None:
        row = next(row[row["candidate"] == chosen].itertuples())
    return (f"{report.number(row.train_rate)} (first k repeats of every train task; "
            f"{report.number(row.delta_vs_baseline_pp, signed=True)} pp vs baseline)")


#: The decisions table's columns and what each is measured against.
_DECISION_LABELS = {
    "round": "round", "child": "child", "parent": "parent",
    "decision": "gate decision", "look": "look", "boundary": "credit boundary (z)",
    "z": "z", "p_one_sided": "p (one-sided)",
    "delta_pp": "Δ vs parent (pp, the decision's repeats)", "kept": "kept",
    "expected_delta_pp": "expected Δ (pp)", "expected_low_pp": "low", "expected_high_pp": "high",
    "worth_pp": "worth_pp", "comparisons": "comparisons learned from",
    "keep_reason": "why kept (or not)"}


def _archive_labels(k: int) -> dict:
    return {"rate": f"train rate (first {k} repeats)",
            "delta_pp": "Δ vs parent (pp, the decision's repeats)",
            "delta_vs_baseline_pp": f"Δ vs baseline (pp, first {k} repeats)"}


def _text(value, missing: str = "n/a") -> str:
    """A text field of a row, ``missing`` where it is None, NaN or empty."""
    return missing if value is None or (not isinstance(value, str) and pd.isna(value)) \
        or value == "" else str(value)


def _is_p(name: str) -> bool:
    """True for a column (or run-table row) holding a p-value."""
    return "_p_" in name or name.startswith(("p_", "p ("))


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _page(title: str, body: str, manifest: dict, refresh: float | None) -> str:
    # no "<" inside the script element: a run's names cannot end it or open a comment
    data = json.dumps(manifest, ensure_ascii=False).replace("<", "\\u003c")
    reload = "" if refresh is None else f"<meta http-equiv='refresh' content='{refresh:g}'>"
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"{reload}<title>{_e(title)}</title><style>{_asset('view.css')}</style></head>\n"
            f"<body>\n{body}\n<script id='gsme-data' type='application/json'>{data}</script>\n"
            f"<script>{_asset('view.js')}</script>\n</body></html>\n")


def _asset(name: str) -> str:
    return resources.files("gsme").joinpath("assets", name).read_text(encoding="utf-8")


def _page_folder(folder: Path) -> Path:
    """``folder``, made if missing; a folder holding anything but a page is refused."""
    if folder.exists() and not folder.is_dir():
        raise ViewError(f"{folder} is a file; gsme view writes a folder (index.html and "
                        "its data): choose another --out")
    folder.mkdir(parents=True, exist_ok=True)
    foreign = [p.name for p in folder.iterdir()
               if p.name not in ("index.html", "index.html.part")
               and not (p.is_dir() and _build(p) > 0)]
    if foreign:
        raise ViewError(f"{folder} holds {', '.join(sorted(foreign)[:3])}, not only a page "
                        "gsme view wrote: choose another --out")
    return folder


def _build(data: Path) -> int:
    """The build number of a ``data-<n>`` folder (0: not one)."""
    suffix = data.name.removeprefix("data-")
    return int(suffix) if data.name.startswith("data-") and suffix.isdigit() else 0
