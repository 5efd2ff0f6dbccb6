"""A CSV/TSV wider than ``WIDE_HEADER`` columns is read with the csv module instead of pandas' parser
(issue 44: refusing a million-column header took minutes); both readers give the same table or the
same refusal. Each case is read twice, once with the threshold lowered so that it takes the wide path."""

from __future__ import annotations

import pandas as pd
import pytest

from ndcg_labeling.errors import InputFileError
from ndcg_labeling.io import tables

CASES = {
    "plain": "a,b,c\n1,2,3\n4,5,6\n",
    "quoted newline and quotes": 'a,b\n"x\ny","say ""hi"""\n3,4\n',
    "blank lines": "a,b\n\n1,2\n\n3,4\n\n",
    "crlf": "a,b\r\n1,2\r\n3,4\r\n",
    "trailing delimiter everywhere": "a,b,\n1,2,\n3,4,\n",
    "trailing delimiter on the rows only": "a,b\n1,2,\n3,4,\n",
    "unnamed columns with values": "a,,c,\n1,2,3,4\n",
    "spaces kept and trimmed": "a , b\n 1 ,x y \n",
    "short row": "a,b,c\n1,2\n",
    "long row": "a,b\n1,2,3\n",
    "header only": "a,b\n",
    "twice named": "a,a\n1,2\n",
    "marked cell": "a,b\n'=1+1,2\n",
    "bom": "\ufeffa,b\n1,2\n",
}


def _read(path, monkeypatch, wide: bool):
    monkeypatch.setattr(tables, "WIDE_HEADER", 0 if wide else 10**9)
    try:
        table = tables.read_table(path)
    except InputFileError as exc:
        return ("error", str(exc))
    frame = table.frame
    return ("table", list(frame.columns), frame.astype(str).values.tolist(), table.trimmed)


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
@pytest.mark.parametrize("name", list(CASES))
def test_the_wide_reader_reads_what_pandas_reads(name, fmt, tmp_path, monkeypatch):
    path = tmp_path / f"t.{fmt}"
    text = CASES[name] if fmt == "csv" else CASES[name].replace(",", "\t")
    path.write_text(text, encoding="utf-8", newline="")
    narrow = _read(path, monkeypatch, wide=False)
    wide = _read(path, monkeypatch, wide=True)
    assert wide == narrow


def test_a_wide_table_keeps_its_cells(tmp_path):
    n = tables.WIDE_HEADER + 5
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(n)) + "\n" + ",".join(str(i) for i in range(n)) + "\n")
    frame = tables.read_table(path).frame
    assert frame.shape == (1, n) and frame["c7"].tolist() == ["7"] and frame[f"c{n - 1}"].tolist() == [str(n - 1)]
    assert isinstance(frame, pd.DataFrame) and frame.dtypes.eq(object).all()
