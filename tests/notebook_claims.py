"""Every number a notebook's text states is one its outputs show: the checker.

Each number in a markdown cell is a *claim*, checked against the outputs shown by the end
of its section (the outputs above it and those of its own section, up to the next
heading; the first section, the title and outline, against all of them): some output
number must equal it to the stated rounding (``30.6`` matches ``30.5556``), or, for a
percentage or a count, a share printed as a fraction (``64 %`` matches ``0.638``). A number
written without a sign is matched by size (the text says "fell by 3.9 pp"), one with a
sign by value. Outputs are streams, plain text, markdown (``IPython.display.Markdown``:
text computed from the run) and HTML.

Not claims, so not checked:

* identifiers and code: numbers glued to a letter (``c0017``, ``tb2``, ``pass@3``), and
  everything inside a code span;
* enumeration: a heading's or a list item's leading number (``## 3.``, ``1.``);
* inputs: numbers the notebook's own code sets (``K = 3``, ``n_tasks=[..., 26]``), and the
  numbers :mod:`gsme.settings` fixes (the gate's level 2.5 %, ``worth_pp`` 0.25, up to 9
  repeats, 80 % power);
* the italic run-time line under the title (a duration, not an output).

Used by ``tests/test_notebook_claims.py`` (the saved notebooks, and the checker itself) and
the root ``conftest.py`` (the outputs of nbval's run of each notebook).
"""

import math
import re
from pathlib import Path

from gsme import settings

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))

NUMBER = re.compile(
    r"(?<![\w.@])(?P<sign>[+\-−]?)(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?"
    r"(?![\w@])(?:\s?(?P<unit>%|pp))?"
)
CODE_SPAN = re.compile(r"`[^`]*`")
ENUMERATOR = re.compile(r"^(\s*#*\s*|\s*)\d+\.\s", re.MULTILINE)
RUN_TIME = re.compile(r"^\*Run time[^*]*\*", re.MULTILINE | re.DOTALL)
OUTPUT_NUMBER = re.compile(r"(?<![\w.])[+\-−]?\d[\d,]*(?:\.\d+)?(?:e[+\-]?\d+)?",
                           re.IGNORECASE)
TAG = re.compile(r"<[^>]+>")


def _value(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def claims(markdown: str) -> list[dict]:
    """The numbers a markdown text states, outside code spans, enumerators and run times.

    Returns one record per number: ``text`` (as written), ``value``, ``decimals`` (its
    stated precision), ``signed`` (written with + or −) and ``unit`` (``%``, ``pp`` or
    None).
    """
    text = RUN_TIME.sub(" ", CODE_SPAN.sub(" ", markdown))
    text = ENUMERATOR.sub(" ", text)
    found = []
    for match in NUMBER.finditer(text):
        written = match.group("sign") + match.group("int")
        written += f".{match.group('frac')}" if match.group("frac") else ""
        found.append({"text": match.group(0).strip(), "value": _value(written),
                      "decimals": len(match.group("frac") or ""),
                      "signed": bool(match.group("sign")), "unit": match.group("unit")})
    return found


def output_text(cell) -> str:
    """The text a code cell's outputs show: streams, plain text, markdown and HTML."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        data = output.get("data", {})
        parts += [data.get(kind, "") for kind in ("text/plain", "text/markdown")]
        parts.append(TAG.sub(" ", data.get("text/html", "")))
    return "\n".join(parts)


def numbers(text: str) -> list[float]:
    """Every number in a text (thousands separators, signs and exponents read)."""
    found = []
    for token in OUTPUT_NUMBER.findall(text):
        try:
            found.append(_value(token))
        except ValueError:
            continue
    return found


def setting_numbers() -> list[float]:
    """The numbers :mod:`gsme.settings` fixes: its constants and the settings' defaults,
    with the gate's one-sided level and its two-sided coverage as percentages."""
    values = [v for v in vars(settings).values() if isinstance(v, int | float)]
    for model in (settings.GateConfig, settings.KeepConfig, settings.RunConfig,
                  settings.Schedule):
        values += [field.default for field in model.model_fields.values()
                   if isinstance(field.default, int | float)]
    alpha = settings.GateConfig().alpha
    values += [100 * alpha, 100 * (1 - 2 * alpha)]
    return [float(v) for v in values if not isinstance(v, bool)]


def supported(claim: dict, shown: list[float]) -> bool:
    """Whether some shown number equals the claim to its stated rounding."""
    tolerance = 0.5 * 10 ** -claim["decimals"] + 1e-9
    scales = (1, 100) if claim["unit"] or claim["decimals"] == 0 else (1,)
    for x in shown:
        for scale in scales:
            value = x * scale
            if not math.isfinite(value):
                continue
            if not claim["signed"]:
                value = abs(value)
            if abs(value - claim["value"]) <= tolerance:
                return True
    return False


def sections(nb) -> list[list]:
    """The notebook's cells cut at each markdown heading."""
    cut = [[]]
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith("#") and cut[-1]:
            cut.append([])
        cut[-1].append(cell)
    return cut


def unsupported(nb) -> list[str]:
    """The claims of a notebook that no output shown by the end of their section shows.

    A claim may cite any output above it or in its own section; the first section (the
    title and outline) may cite any output of the notebook.

    Returns one line per unsupported claim: the cell's index, the number as written and the
    sentence around it.
    """
    index = {id(cell): i for i, cell in enumerate(nb.cells)}
    code = [c for c in nb.cells if c.cell_type == "code"]
    exempt = set().union(*(numbers(c.source) for c in code))
    fixed = setting_numbers()
    cut = sections(nb)
    everything = numbers("\n".join(output_text(c) for c in code))
    problems, shown = [], []
    for number, section in enumerate(cut):
        shown += numbers("\n".join(output_text(c) for c in section if c.cell_type == "code"))
        for cell in section:
            if cell.cell_type != "markdown":
                continue
            for claim in claims(cell.source):
                if not claim["signed"] and (claim["value"] in exempt
                                            or supported(claim, fixed)):
                    continue
                if not supported(claim, everything if number == 0 else shown):
                    where = cell.source.find(claim["text"])
                    context = " ".join(cell.source[max(0, where - 60):where + 40].split())
                    problems.append(f"cell {index[id(cell)]}: {claim['text']!r} in "
                                    f"…{context}…")
    return problems


