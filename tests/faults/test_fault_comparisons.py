"""A comparisons file gsme appends to (``learn_from``) is never corrupted, and a bad one is
one line (issue 32): appends follow the file's own header order, start on a new line, and
refuse a header that is not the comparisons contract; an empty or non-UTF-8 file is one
line, before anything is created."""

import pandas as pd
import pytest
from faultkit import cli, one_line_error, tiny_config

from gsme import comparisons
from gsme.schema import FrameError

COLUMNS = comparisons._COLUMNS
WORLD = {p: "x" for p in comparisons.PARTS}


def _rows(run: str, n: int = 2) -> pd.DataFrame:
    decisions = pd.DataFrame({"child": [f"c{i}" for i in range(n)], "parent": "baseline",
                              "split": "train", "round": 1, "n_tasks": 40,
                              "delta_pp": [1.5 * (i + 1) for i in range(n)], "se_pp": 3.0,
                              "decision": "inconclusive"})
    return comparisons.of_run(decisions, signature=WORLD, run=run)


def test_an_append_follows_the_header_order_of_the_file(tmp_path):
    book = tmp_path / "book.csv"
    order = COLUMNS[::-1]
    _rows("r1")[order].to_csv(book, index=False)
    assert comparisons.append(book, _rows("r2")) == 2
    assert book.read_text().splitlines()[0].split(",") == order
    back = comparisons.read(book)
    assert back["run"].tolist() == ["r1", "r1", "r2", "r2"]
    pd.testing.assert_frame_equal(back.iloc[2:].reset_index(drop=True), _rows("r2"))


def test_an_append_starts_on_a_new_line(tmp_path):
    book = tmp_path / "book.csv"
    book.write_text(_rows("r1").to_csv(index=False).rstrip("\n"))  # no final newline
    assert comparisons.append(book, _rows("r2")) == 2
    back = comparisons.read(book)
    assert back["run"].tolist() == ["r1", "r1", "r2", "r2"]
    assert back["delta_pp"].tolist() == [1.5, 3.0, 1.5, 3.0]


@pytest.mark.parametrize("change, says", [
    (lambda f: f.assign(notes="mine"), "unknown or repeated ['notes']"),
    (lambda f: f.drop(columns="se_pp"), "missing ['se_pp']"),
])
def test_an_append_refuses_a_header_that_is_not_the_contract(tmp_path, change, says):
    book = tmp_path / "book.csv"
    change(_rows("r1")).to_csv(book, index=False)
    before = book.read_bytes()
    with pytest.raises(FrameError, match=says.replace("[", r"\[").replace("]", r"\]")) as err:
        comparisons.append(book, _rows("r2"))
    assert "\n" not in str(err.value) and book.read_bytes() == before


@pytest.mark.parametrize("data, says", [
    (b"", "is empty (no header)"),
    (("agent,evolver\nb\xe9\n").encode("latin-1"), "is not UTF-8 text (byte 0xe9"),
])
def test_an_empty_or_non_utf8_learn_from_file_is_one_line(tmp_path, capsys, data, says):
    book = tmp_path / "book.csv"
    book.write_bytes(data)
    config = tiny_config(tmp_path / "c.toml", tmp_path / "run", policy='"learned"',
                         learn_from=f'"{book}"')
    code, out, err = cli(capsys, "run", config, "--quiet")
    assert code == 2 and says in one_line_error(err)
    assert not (tmp_path / "run").exists() and book.read_bytes() == data
