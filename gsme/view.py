"""A run as one self-contained HTML page: ``gsme view DIR`` writes it.

The page needs no server and no network: figures are embedded as base64 PNG, the styles
and the one small script (the transcript search box) are inline. Every text from the run
(transcripts, rationales, diffs, ids) is HTML-escaped: a transcript holding ``<script>``
shows as text. The patch and side-by-side fragments are shared with the explorer
(:mod:`gsme.widgets`), so both show a candidate the same way.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gsme import archive, explain, plot, report

__all__ = ["diff_html", "pair_html", "patch_html", "render", "write"]

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


def write(run, path, *, split: str = "train") -> Path:
    """Write :func:`render`'s page to ``path`` (UTF-8); return the path.

    Examples
    --------
    >>> from gsme.experiments import simulated_run
    >>> run = simulated_run("tiny", rounds=1)
    >>> page = write(run, "run.html")
    >>> page.name, page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    ('run.html', True)
    >>> run.close()
    """
    path = Path(path)
    path.write_text(render(run, split=split), encoding="utf-8")
    return path


def render(run, *, split: str = "train") -> str:
    """The run as one HTML page: run table, figures, decisions, archive, lineage, every
    candidate's patch and changed trials, and every transcript behind a search box.

    Parameters
    ----------
    run : gsme.run.Run
        A live (open read-only) or sealed run.
    split : {"train", "test"}
        The split whose decisions and paired trials are shown.

    Returns
    -------
    str
        The page, self-contained.

    Examples
    --------
    >>> from gsme import experiments
    >>> run = experiments.simulated_run("tiny", rounds=1, progress=False)  # SIMULATED
    >>> page = render(run)
    >>> page.startswith("<!DOCTYPE html>"), "c0001" in page
    (True, True)
    >>> run.close()
    """
    details = explain.patch_details(run, split=split)
    chosen = explain.selected(run)
    sealed = run.sealed_result is not None
    table = report.run_table(run) if sealed else None
    ship = report.ship_line(report.recommendation(table) if sealed else None)
    decisions = explain.keep_reasons(run, split=split)
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
        f"then ({int(explain.INTERVAL * 100)}% interval), set against worth_pp.</p>",
        _frame_table(decisions[list(_DECISION_LABELS)].rename(columns=_DECISION_LABELS),
                     cls="decisions"),
        "<h2 id='archive'>Archive</h2>",
        _frame_table(explain.archive_table(run).rename(columns=_archive_labels(
            run.config.gate.k)), cls="archive"),
        "<h2 id='candidates'>Candidates</h2>",
        *(_candidate_section(row, trials, split, chosen) for row in details.itertuples()),
        "<h2 id='transcripts'>Transcripts</h2>",
        _transcripts(explain.transcripts(run)),
    ]
    return _page(title, "\n".join(p for p in parts if p))


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

def _candidate_section(row, trials: pd.DataFrame, split: str, chosen: str) -> str:
    mark = " <span class='badge'>selected harness</span>" if row.candidate == chosen else ""
    parts = [f"<section class='candidate' id='candidate-{_e(row.candidate)}'>",
             f"<h3>{_e(row.candidate)}{mark}</h3>", patch_html(row)]
    if row.parent is not None and not pd.isna(row.parent):
        pairs = explain.paired_trials(trials, parent=row.parent, child=row.candidate,
                                      split=split, change=["fixed", "broken"])
        parts.append(f"<details class='changed'><summary>{len(pairs)} repeat(s) that changed "
                     f"from {_e(row.parent)} ({split})</summary>"
                     f"{_changed_table(pairs)}</details>" if len(pairs) else
                     f"<p>No repeat changed outcome from {_e(row.parent)} ({split}).</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _changed_table(pairs: pd.DataFrame) -> str:
    rows = []
    for r in pairs.itertuples():
        links = [f"<a href='#t-{_anchor(ref)}'>{'passed' if ok else 'failed'}"
                 f"{'' if pd.isna(label) or not label else ' · ' + _e(label)}</a>"
                 for ok, label, ref in ((r.passed_parent, r.pathology_parent,
                                         r.trajectory_parent),
                                        (r.passed_child, r.pathology_child,
                                         r.trajectory_child))]
        rows.append(f"<tr><td>{_e(r.task_id)}</td><td>{int(r.repeat)}</td>"
                    f"<td>{_e(r.change)}</td><td>{links[0]}</td><td>{links[1]}</td></tr>")
    return (f"<table style='{STYLES['table']}'><tr><th>task</th><th>repeat</th>"
            "<th>change</th><th>parent</th><th>child</th></tr>" + "".join(rows) + "</table>")


def _transcripts(frame: pd.DataFrame) -> str:
    rows = []
    for r in frame.itertuples():
        first = next((line for line in r.text.splitlines() if line.strip()), "")
        label = "" if pd.isna(r.pathology) or not r.pathology else r.pathology
        rows.append(
            f"<tr id='t-{_anchor(r.trajectory)}'><td>{_e(r.candidate)}</td>"
            f"<td>{_e(r.task_id)}</td><td>{_e(r.split)}</td><td>{int(r.repeat)}</td>"
            f"<td>{int(r.attempt)}</td><td>{'passed' if r.passed else 'failed'}</td>"
            f"<td>{_e(label)}</td><td><details><summary>{_e(first[:100])}</summary>"
            f"<pre class='gsme-transcript'>{_e(r.text)}</pre></details></td></tr>")
    return (
        "<p><input id='search' type='search' placeholder='search transcripts' "
        "autocomplete='off' size='40'> <span id='search-count'>"
        f"{len(frame)} of {len(frame)} transcripts</span></p>"
        f"<table id='transcript-table' style='{STYLES['table']}'><thead><tr>"
        "<th>candidate</th><th>task</th><th>split</th><th>repeat</th><th>attempt</th>"
        "<th>outcome</th><th>pathology</th><th>transcript</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>")


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


def _frame_table(frame: pd.DataFrame, *, cls: str) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in frame.columns)
    p_column = [_is_p(str(c)) for c in frame.columns]
    body = "".join("<tr>" + "".join(f"<td>{_e(_cell(v, p=p or _is_p(str(row[0]))))}</td>"
                                    for v, p in zip(row, p_column)) + "</tr>"
                   for row in frame.itertuples(index=False))
    return (f"<table class='{cls}' style='{STYLES['table']}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


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
    "round": "round", "candidate": "candidate", "parent": "parent",
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


def _anchor(ref: str) -> str:
    """An id-safe form of a transcript reference (letters, digits, ``-``, ``_``)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in str(ref))


def _e(value) -> str:
    return html.escape(str(value), quote=True)


_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px;
       padding: 0 1em; color: #222; }
h2 { border-bottom: 1px solid #ccc; margin-top: 1.6em; }
th { text-align: left; }
td, th { padding: 2px 8px; }
table.decisions td, table.archive td, #transcript-table td { border-bottom: 1px solid #eee; }
#transcript-table pre { font-size: 12px; white-space: pre-wrap; margin: 0; padding: 6px;
                        background: #fafafa; border: 1px solid #ddd; }
figure { display: inline-block; margin: 0.5em; }
figure img { max-width: 100%; }
section.candidate { border: 1px solid #ddd; border-radius: 4px; padding: 0.2em 1em 1em;
                    margin: 1em 0; }
.badge { background: #0072B2; color: white; font-size: 12px; padding: 1px 6px;
         border-radius: 8px; }
.simulated { color: #8a1f11; }
"""

_SEARCH = """
(() => {
  const box = document.getElementById("search");
  const count = document.getElementById("search-count");
  const rows = Array.from(document.querySelectorAll("#transcript-table tbody tr"));
  const texts = rows.map((row) => row.textContent.toLowerCase());
  box.addEventListener("input", () => {
    const query = box.value.trim().toLowerCase();
    let shown = 0;
    rows.forEach((row, i) => {
      const hit = !query || texts[i].includes(query);
      row.hidden = !hit;
      row.querySelector("details").open = hit && query !== "";
      shown += hit;
    });
    count.textContent = `${shown} of ${rows.length} transcripts`;
  });
})();
"""


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"<script>{_SEARCH}</script>\n</body></html>\n")
