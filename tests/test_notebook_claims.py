"""A notebook's text states only numbers its outputs show (issue 31): the checker of
``tests/notebook_claims.py`` on synthetic notebooks (a wrong number fails) and on every
notebook as saved, with the full-size outputs its text reads. The root ``conftest.py``
runs the same check on the outputs of nbval's execution of each notebook.
"""

import nbformat
import pytest
from notebook_claims import NOTEBOOKS, claims, unsupported


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for kind, source, *printed in cells:
        if kind == "md":
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
        else:
            cell = nbformat.v4.new_code_cell(source)
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t)
                            for t in printed]
            nb.cells.append(cell)
    return nb


def test_claims_skip_identifiers_code_spans_and_enumerators():
    found = claims("## 2. Seal\n\n1. c0017 on `tb2` at `K=3` gained +30.6 pp (z = 5.57), "
                   "71 % retained, 2,424.5 trials.")
    assert [(c["text"], c["value"], c["decimals"], c["signed"], c["unit"]) for c in found] == [
        ("+30.6 pp", 30.6, 1, True, "pp"), ("5.57", 5.57, 2, False, None),
        ("71 %", 71.0, 0, False, "%"), ("2,424.5", 2424.5, 1, False, None)]


def test_a_right_number_passes_and_a_wrong_one_fails():
    right = _notebook(("code", "K = 3"), ("md", "# Run"),
                      ("code", "print(table)", "train_delta_pp 30.5556\nshare 0.6383\n"),
                      ("md", "It gained +30.6 pp at K=3, keeping 64 % of it."))
    assert unsupported(right) == []
    wrong = _notebook(("code", "K = 3"), ("md", "# Run"),
                      ("code", "print(table)", "train_delta_pp 30.5556\nshare 0.6383\n"),
                      ("md", "It gained +30.7 pp at K=3, keeping 64 % of it."))
    assert unsupported(wrong) == [("cell 3: '+30.7 pp' in …It gained +30.7 pp at K=3, "
                                   "keeping 64 % of it.…")]


def test_a_claim_cites_outputs_above_it_or_in_its_section_only():
    nb = _notebook(("md", "# Title: rates 0.417 and 0.808"), ("code", ""),
                   ("md", "## One"), ("md", "The rate rose to 0.808."),
                   ("code", "print(a)", "rate 0.417\n"),
                   ("md", "## Two"), ("md", "From 0.417 it rose to 0.808."),
                   ("code", "print(b)", "rate 0.808\n"),
                   ("md", "## Three"), ("md", "It fell to 0.333."))
    assert unsupported(nb) == ["cell 3: '0.808' in …The rate rose to 0.808.…",
                               "cell 9: '0.333' in …It fell to 0.333.…"]


def test_a_sign_is_checked_when_written():
    nb = _notebook(("code", ""), ("md", "# Run"), ("code", "print(d)", "delta_pp -3.9\n"),
                   ("md", "It fell by 3.9 pp."), ("md", "It rose by +3.9 pp."))
    assert unsupported(nb) == ["cell 4: '+3.9 pp' in …It rose by +3.9 pp.…"]


def test_inputs_and_settings_are_not_claims_and_computed_text_is_an_output():
    nb = _notebook(("code", "SEEDS = range(26)"), ("md", "# Run"),
                   ("md", "On 26 seeds, kept above 0.25 pp, at one-sided 2.5 %: 0.808."))
    assert unsupported(nb) == ["cell 2: '0.808' in …On 26 seeds, kept above 0.25 pp, at "
                               "one-sided 2.5 %: 0.808.…"]
    shown = nbformat.v4.new_code_cell("Markdown(...)")
    shown.outputs = [nbformat.v4.new_output("execute_result", execution_count=1,
                                            data={"text/markdown": "rate 0.808"})]
    nb.cells.insert(2, shown)
    assert unsupported(nb) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_the_saved_notebooks_text_states_only_their_outputs(path):
    assert unsupported(nbformat.read(path, as_version=4)) == []
