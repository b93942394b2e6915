import doctest

import numpy as np
import pytest
from scipy import stats as sps

from gsme import report, stats


def test_docstring_examples_run():
    assert doctest.testmod(report, raise_on_error=False).failed == 0


def test_paper_table_has_the_seed_rows():
    table = report.paper_table()
    assert table["benchmark"].tolist() == [
        "TB2", "LiveCode", "Omni-MATH", "BrowseComp+", "GDPval", "AppWorld", "SWE-bench"]
    assert table["preliminary"].tolist() == [False] * 6 + [True]
    assert table.loc[0, ["train_delta_pp", "sealed_delta_pp", "z", "retention_pct"]].tolist() \
        == [6.3, 9.3, 2.71, 147]


def test_recomputed_retention_agrees_within_the_tables_rounding():
    table = report.paper_table()
    gap = (table["retention_pct"] - table["retention_pct_gsme"]).abs()
    assert (gap <= table["retention_tolerance_pp"]).all()
    # the tolerance is tight: it is not satisfied by, say, sealed / (train + 1)
    wrong = stats.retention(table["train_delta_pp"] + 1, table["sealed_delta_pp"])
    assert ((table["retention_pct"] - wrong).abs() > table["retention_tolerance_pp"]).any()


def test_recomputed_p_values_match_the_papers_range():
    table = report.paper_table().set_index("benchmark")
    assert table.loc["GDPval", "p_value_gsme"] == pytest.approx(0.033, abs=5e-4)
    assert table.loc["AppWorld", "p_value_gsme"] < 1e-4
    np.testing.assert_allclose(table["p_value_gsme"], 2 * sps.norm.sf(table["z"].abs()))
    credited = table[table["credited"]]
    assert len(credited) == 6 and "SWE-bench" not in credited.index
    assert credited["p_value_gsme"].max() == pytest.approx(0.033, abs=5e-4)
