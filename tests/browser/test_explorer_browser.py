"""The explorer in a real browser: JupyterLab serves a notebook, headless Chromium runs it.

The notebook is what a user types in a fresh kernel (no ``%matplotlib`` magic): open a run
by path, then README's one-liner ``from gsme.widgets import explore; explore(run)``. The
test checks that the widget shows the figure as a PNG ``<img>`` (never the text
``<Figure size ...>``) and that moving the round slider replaces the image.

Needs Debian's ``chromium`` (``/usr/bin/chromium``, or the path in ``$GSME_CHROMIUM``) and
the ``playwright`` package (its own browser download is not used); skipped, with the
reason, when either is missing. JupyterLab comes with the ``test`` extra.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# generous bounds for a loaded machine (the test takes ~30 s); a figure shown as text or
# an error fails at once, without waiting for them
SERVER_START_S = 60
WAIT_MS = 90_000
FIGURE = "img.gsme-explorer-forest"
PATCH = ".gsme-explorer-patch"
SIDES = ".gsme-explorer-sides"
PNG_MAGIC = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
#: Where screenshots go besides the test's tmp dir, when set.
ARTIFACTS = os.environ.get("GSME_BROWSER_ARTIFACTS")


def make_run(root: Path) -> tuple[Path, int]:
    """Build the run the notebook opens, the smallest simulated one, seeded.

    Returns its path and its last round.

    The one place that knows how a run is made. The run is closed, so that the notebook's
    kernel can open it.
    """
    from gsme.experiments import simulated_run

    with simulated_run("tiny", root=root, seed=0, rounds=1) as run:
        last = int(run.candidates()["round"].max())
        assert last >= 1, "the slider needs two rounds to move between"
        return Path(run.path), last


def chromium_path() -> str:
    path = os.environ.get("GSME_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(path, os.X_OK):
        pytest.skip(f"no Chromium at {path} (Debian: apt-get install -y chromium; or set "
                    "GSME_CHROMIUM)")
    return path


@contextlib.contextmanager
def chromium_page(width: int = 1200, height: int = 1000):
    """A page of a headless Chromium driven by playwright, closed after (skips without
    either)."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    executable = chromium_path()
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            browser.close()


def write_notebook(path: Path, run_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell(f"from gsme.run import Run\nrun = Run.open({str(run_path)!r})"),
        nbformat.v4.new_code_cell("from gsme.widgets import explore; explore(run)"),
    ]
    nbformat.write(nb, path)


#: JupyterLab user settings: start the notebook's kernel without asking, fetch no news.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
}


def write_lab_settings(config_dir: Path) -> None:
    for name, values in LAB_SETTINGS.items():
        path = config_dir / "lab" / "user-settings" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Lab:
    """A running JupyterLab: its process, base url and token."""

    proc: subprocess.Popen
    url: str
    token: str
    log: Path

    def wait(self) -> None:
        """Return once the server answers; fail with its log if it exits or does not."""
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            with contextlib.suppress(OSError):  # not listening yet
                api(self, "/api/status", timeout=2)
                return
            time.sleep(0.2)  # polling the server's readiness, not synchronising the page
        pytest.fail(f"JupyterLab did not start on {self.url}:\n{self.log.read_text()[-3000:]}")


def api(lab: Lab, path: str, body: dict | None = None, *, timeout: float = 10) -> dict:
    """Call the Jupyter server's REST API (POST when ``body`` is given)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"{lab.url}{path}", data=data,
                                 headers={"Authorization": f"token {lab.token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as reply:
        return json.loads(reply.read() or b"{}")


@contextlib.contextmanager
def jupyter_lab(root: Path, home: Path):
    """JupyterLab on a free localhost port, with its own config and settings under ``home``.

    Yields at once (the server boots meanwhile; :meth:`Lab.wait` for it); shuts the server
    down through its API on exit, which stops its kernels, and ends it if that fails.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MPLBACKEND"))}
    env.update(JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_DATA_DIR=str(home / "data"),
               JUPYTER_RUNTIME_DIR=str(home / "runtime"), IPYTHONDIR=str(home / "ipython"),
               JUPYTER_PLATFORM_DIRS="1", PYTHONUNBUFFERED="1")
    write_lab_settings(home / "config")
    token, port = secrets.token_hex(16), free_port()
    with open(home / "lab.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
             "--LabApp.news_url=",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run cells by command
             *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI runs as root
            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        lab = Lab(proc, f"http://127.0.0.1:{port}", token, home / "lab.log")
        try:
            yield lab
        finally:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):  # else: ended below
                api(lab, "/api/shutdown", {}, timeout=5)
                proc.wait(timeout=10)
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


FETCH_FIGURE = """async (selector) => {
    const img = document.querySelector(selector);
    const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
    const box = img.getBoundingClientRect();
    return {src: img.src, bytes: Array.from(bytes), natural: [img.naturalWidth,
            img.naturalHeight], shown: [box.width, box.height]};
}"""


RUN_ALL = """async (ms) => {
    const app = window.jupyterapp;
    const ready = (async () => {
        await app.restored;
        const panel = await app.commands.execute("docmanager:open", {path: "explore.ipynb"});
        await panel.context.ready;
        await panel.sessionContext.ready;
        app.shell.activateById(panel.id);
    })();
    const late = new Promise((_, reject) => setTimeout(
        () => reject(new Error(`notebook or kernel not ready after ${ms} ms`)), ms));
    await Promise.race([ready, late]);
    app.commands.execute("notebook:run-all-cells");  // its outcome is waited for by the test
}"""

FIRST_OUTCOME = """(selector) => {
    const img = document.querySelector(selector);
    if (img && img.complete && img.naturalWidth > 0) return "image";
    const text = Array.from(document.querySelectorAll(".jp-OutputArea"),
                            (e) => e.innerText).join("\\n");
    if (text.includes("<Figure size")) return "the figure as text";
    if (text.includes("Traceback")) return "an error";
    return false;
}"""


def figure(page) -> dict:
    """The explorer's figure as the browser holds it: src, PNG bytes, natural/shown size."""
    shot = page.evaluate(FETCH_FIGURE, FIGURE)
    shot["bytes"] = bytes(shot["bytes"])
    shot["sha"] = hashlib.sha256(shot["bytes"]).hexdigest()
    return shot


def output_text(page) -> str:
    return "\n".join(page.locator(".jp-OutputArea").all_inner_texts())


def screenshot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    if ARTIFACTS:
        Path(ARTIFACTS).mkdir(parents=True, exist_ok=True)
        shutil.copy(tmp_path / f"{name}.png", Path(ARTIFACTS) / f"{name}.png")


def test_explorer_renders_a_png_and_the_slider_redraws_it(tmp_path):
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    executable = chromium_path()
    work, home = tmp_path / "lab", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    with jupyter_lab(work, home) as lab:  # it boots while the run is built
        run_path, last_round = make_run(tmp_path / "runs")
        write_notebook(work / "explore.ipynb", run_path)
        lab.wait()
        # the server starts the notebook's kernel while the browser starts
        api(lab, "/api/sessions", {"path": "explore.ipynb", "name": "explore.ipynb",
                                   "type": "notebook", "kernel": {"name": "python3"}})
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"), executable_path=executable,
                args=CHROMIUM_ARGS, headless=True, viewport={"width": 1600, "height": 1200})
            try:
                page = browser.new_page()
                page.set_default_timeout(WAIT_MS)
                try:
                    drive(page, lab, last_round, tmp_path)
                except Exception:
                    screenshot(page, tmp_path, "explorer-failure")
                    raise
            finally:
                browser.close()


def drive(page, lab: Lab, last_round: int, tmp_path: Path) -> None:
    page.goto(f"{lab.url}/lab/tree/explore.ipynb?token={lab.token}")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate(RUN_ALL, WAIT_MS)  # what Run ▸ Run All Cells does, once the kernel is up

    # whichever comes first: the figure's image, the figure as text, or an error
    outcome = page.wait_for_function(FIRST_OUTCOME, arg=FIGURE).json_value()
    text = output_text(page)
    assert outcome == "image", f"the explorer showed {outcome} instead of a PNG:\n{text}"
    assert "<Figure size" not in text, f"the figure was printed as text:\n{text}"
    assert "Traceback" not in text, text
    first = figure(page)
    assert first["bytes"][:8] == bytes(PNG_MAGIC), "the figure is not a PNG"
    assert first["natural"] == [720, 340]  # 7.2 x 3.4 in at 100 dpi
    assert len(first["bytes"]) > 10_000
    assert first["shown"] == [720, 340], first["shown"]  # shown at its size: legible
    check_patch_and_sides(page)
    screenshot(page, tmp_path, f"explorer-round-{last_round}")

    # the slider starts on the last round; one step left with the keyboard
    readout = page.locator(".widget-slider .widget-readout").first
    assert readout.inner_text().strip() == str(last_round)
    handle = page.locator(".widget-slider .noUi-handle").first
    handle.focus()
    handle.press("ArrowLeft")
    page.wait_for_function(
        """([selector, before]) => { const img = document.querySelector(selector);
            return img && img.src !== before && img.complete && img.naturalWidth > 0; }""",
        arg=[FIGURE, first["src"]])
    second = figure(page)
    assert readout.inner_text().strip() == str(last_round - 1)
    assert second["bytes"][:8] == bytes(PNG_MAGIC)
    assert second["sha"] != first["sha"], "the slider moved but the figure did not change"
    assert "<Figure size" not in output_text(page)
    screenshot(page, tmp_path, f"explorer-round-{last_round - 1}")


PANE = """([patch, sides]) => {
    const pane = document.querySelector(patch), both = document.querySelector(sides);
    const text = (root, sel) => Array.from(root.querySelectorAll(sel), (e) => e.textContent);
    return {heading: text(pane, "h4"), diff: text(pane, "pre.gsme-diff"),
            added: text(pane, "pre.gsme-diff span.gsme-add").length,
            gate: text(pane, "table.gsme-gate th"),
            parent: text(both, "table.gsme-sides th.gsme-side-parent"),
            child: text(both, "table.gsme-sides th.gsme-side-child"),
            transcripts: text(both, "table.gsme-sides pre.gsme-transcript")};
}"""


def check_patch_and_sides(page) -> None:
    """The patch pane holds a marked-up diff and the gate table; the side-by-side view a
    table with the parent's and the child's transcripts; picking another candidate in the
    list replaces both."""
    page.wait_for_selector(f"{PATCH} pre.gsme-diff span.gsme-add")
    page.wait_for_selector(f"{SIDES} table.gsme-sides pre.gsme-transcript")
    pane = page.evaluate(PANE, [PATCH, SIDES])
    assert len(pane["heading"]) == 1 and pane["heading"][0].startswith("patch c"), pane
    assert pane["diff"][0].startswith("diff --git") and pane["added"] > 0, pane
    assert {"where × why", "env gate", "beacon", "activation", "decision"} <= set(pane["gate"])
    assert pane["parent"][0].startswith("parent ") and pane["child"][0].startswith("child ")
    assert len(pane["transcripts"]) == 2 and all(t.strip() for t in pane["transcripts"])
    picker = page.locator(".gsme-explorer-candidates select")
    values = picker.locator("option").evaluate_all("(os) => os.map((o) => o.value)")
    labels = [t.replace("\xa0", " ") for t in picker.locator("option").all_inner_texts()]
    assert all(" · " in label and "z=" in label for label in labels), labels
    current = picker.evaluate("(s) => s.value")
    other = next(v for v in values if v != current)
    before = pane["heading"][0]
    picker.select_option(other)
    page.wait_for_function(
        """([sel, before]) => { const h = document.querySelector(sel + " h4");
            return h && h.textContent !== before; }""", arg=[PATCH, before])
    after = page.evaluate(PANE, [PATCH, SIDES])
    assert after["heading"][0] != before and after["diff"][0].startswith("diff --git")
