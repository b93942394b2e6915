"""One reader of trials files (issue 32): ids stay text wherever a trials CSV is read
(``gsme compare`` reads as :func:`gsme.io.read_trials` does), and a file that is no table is
one error naming the file, never a raw pandas or pyarrow error."""

import json

import pandas as pd
import pytest
from faultkit import cli, one_line_error

from gsme import importers, io
from gsme.schema import FrameError

HEADER = "candidate,task_id,split,repeat,passed\n"


def _side(path, candidate, ids, passed):
    rows = [f"{candidate},{task},train,{r},{int(passed)}\n" for task in ids for r in range(3)]
    path.write_text(HEADER + "".join(rows))
    return path


def test_numeric_looking_ids_are_the_same_text_in_every_reader(tmp_path, capsys):
    base = _side(tmp_path / "base.csv", "base", ["001", "1.10", "3", "4", "5"], False)
    child = _side(tmp_path / "child.csv", "child", ["1", "1.1", "3", "4", "5"], True)
    imported = importers.read_pair(base, child).trials
    for path, name in ((base, "base"), (child, "child")):
        assert (imported.loc[imported["candidate"] == name, "task_id"].tolist()
                == io.read_trials(path)["task_id"].tolist())
    code, out, _ = cli(capsys, "compare", base, child, "--json")
    row = json.loads(out)
    assert code == 0 and (row["n_tasks"], row["n_dropped"]) == (3, 4)  # 001 is not 1


BROKEN = {
    "empty.csv": (b"", "is not a readable trials CSV (No columns to parse from file)"),
    "latin1.csv": (HEADER.encode() + "bas\xe9,t1,train,0,1\n".encode("latin-1"),
                   "is not a readable trials CSV (not UTF-8 text"),
    "extra_field.csv": (HEADER.encode() + b"a,t1,train,0,1,surplus\n",
                        "a row has more fields than the header"),
    "broken_quote.csv": (HEADER.encode() + b'"a,t1,train,0,1\n', "EOF inside string"),
    "named_twice.csv": (b"candidate,candidate,task_id,split,repeat,passed\na,a,t1,train,0,1\n",
                        "names column(s) ['candidate'] more than once in its header"),
    "not.parquet": (b"PAR1 not really", "is not a readable Parquet file"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_file_that_is_no_table_is_a_frame_error_naming_it(tmp_path, name):
    data, says = BROKEN[name]
    (tmp_path / name).write_bytes(data)
    with pytest.raises(FrameError) as caught:
        io.read_trials(tmp_path / name)
    first = str(caught.value).splitlines()[0]
    assert says in first and name in first


@pytest.mark.parametrize("name", sorted(n for n in BROKEN if n.endswith(".csv")))
def test_gsme_compare_says_the_same_in_one_line(tmp_path, capsys, name):
    data, says = BROKEN[name]
    (tmp_path / name).write_bytes(data)
    code, _, err = cli(capsys, "compare", tmp_path / name, tmp_path / name, "--format", "csv")
    assert code == 2 and says in one_line_error(err)


def test_a_first_row_with_a_surplus_field_never_shifts_the_columns(tmp_path):
    """pandas took the surplus field as an index column and read every value one column over."""
    path = tmp_path / "shifted.csv"
    path.write_text(HEADER + "a,t1,train,0,1,surplus\n")
    with pytest.raises(FrameError, match="more fields than the header"):
        importers.read_trials_csv(path)
    assert pd.read_csv(path).index.tolist() == ["a"]  # what pandas alone does
