"""Data from Python to a vbn Dataset: a pandas DataFrame, a dict of arrays (a 2-d one under
an array's name for all its elements), or the path of a CSV file. Binary columns take ±1, 1/0 (0 meaning -1), 1.0/0.0 and booleans, with NaN, None
or pandas' NA for a missing value; covariate columns take finite numbers. Anything else is a
DataError naming the column and the row (0-based, as iloc counts; with the index label when
the DataFrame has its own index)."""

import math
import os
import re

import numpy as np

from . import _vbn
from .errors import DataError

_ELEMENT = re.compile(r"^(\w+)\.(\d+(?:\.\d+)*)$")


def _canonical(name):
    """'v.3' and 'W.2.3' as 'v[3]' and 'W[2,3]', the two spellings CSV headers allow."""
    m = _ELEMENT.match(name)
    return f"{m[1]}[{m[2].replace('.', ',')}]" if m else name


def _missing(v):
    if v is None:
        return True
    try:
        import pandas as pd
        if v is pd.NA or v is pd.NaT:
            return True
    except ImportError:
        pass
    return isinstance(v, (float, np.floating)) and math.isnan(v)


def _fail(column, row, labels, what):
    where = f"row {row}" if labels is None else f"row {row} (index {labels[row]!r})"
    raise DataError(f"column '{column}', {where}: {what}", row=row, column_name=column)


def _binary_value(v):
    """A binary entry as ±1 or NaN; None if it is not one."""
    if _missing(v):
        return math.nan
    if isinstance(v, (bool, np.bool_)):
        return 1.0 if v else -1.0
    if isinstance(v, (int, float, np.integer, np.floating)):
        if v in (1, -1):
            return float(v)
        if v == 0:
            return -1.0
    return None


def _covariate_value(v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return None
    return float(v) if math.isfinite(v) else None


def _complain(name, i, v, binary, labels):
    what = ("a binary node takes 1/-1, 1/0, True/False or a missing value (NaN, None)" if binary
            else "a covariate takes a finite number")
    _fail(name, i, labels, f"{v!r} is not a value here: {what}")


def _convert_numbers(name, arr, binary, labels):
    """The fast path: a numeric or boolean array."""
    if arr.dtype.kind == "b":
        return np.where(arr, 1.0, -1.0) if binary else _complain(name, 0, arr[0].item(), binary, labels)
    x = arr.astype(float)
    ok = (np.isnan(x) | np.isin(x, (1.0, -1.0, 0.0))) if binary else np.isfinite(x)
    bad = np.flatnonzero(~ok)
    if bad.size:
        _complain(name, int(bad[0]), arr[bad[0]].item(), binary, labels)
    return np.where(x == 0, -1.0, x) if binary else x


def _convert(name, values, binary, labels):
    arr = np.asarray(values)
    if arr.dtype.kind not in "biuf" and not isinstance(values, np.ndarray):
        arr = np.asarray(values, dtype=object)  # a list of mixed values: each as given
    if arr.ndim != 1:
        raise DataError(f"column '{name}' has {arr.ndim} dimensions; give one value per row", column_name=name)
    if arr.dtype.kind in "biuf":
        return _convert_numbers(name, arr, binary, labels)
    out = np.empty(len(arr))
    for i, v in enumerate(arr.tolist()):
        x = _binary_value(v) if binary else _covariate_value(v)
        if x is None:
            _complain(name, i, v, binary, labels)
        out[i] = x
    return out


def _items(data):
    """(name, values, index labels or None) of each column."""
    try:
        import pandas as pd
        if isinstance(data, pd.DataFrame):
            labels = None if data.index.equals(pd.RangeIndex(len(data))) else list(data.index)
            return [(str(c), data[c].to_numpy(), labels) for c in data.columns]
    except ImportError:
        pass
    if isinstance(data, dict):
        return [(str(k), v, None) for k, v in data.items()]
    raise DataError(f"data must be a pandas DataFrame, a dict of arrays or the path of a CSV file, not {type(data).__name__}")


def _check_index(data, known):
    """A model's column kept as the DataFrame's index (after set_index or a groupby) is not
    among its columns: say so, rather than that the column is missing."""
    names = [n for n in getattr(getattr(data, "index", None), "names", []) if n is not None]
    columns = {_canonical(str(c)) for c in getattr(data, "columns", [])}
    for n in names:
        if _canonical(str(n)) in known and _canonical(str(n)) not in columns:
            raise DataError(f"'{n}' is the DataFrame's index, not one of its columns: pass frame.reset_index()",
                            column_name=str(n))


def _expand(items, known):
    """A 2-d array under an array's name ({"v": rows x 8}) as its columns v[1] ... v[8]."""
    for col, values, labels in items:
        if f"{col}[1]" in known and not isinstance(values, (str, bytes)) and np.ndim(values) == 2:
            arr = np.asarray(values)
            for k in range(arr.shape[1]):
                yield f"{col}[{k + 1}]", arr[:, k], labels
        else:
            yield col, values, labels


def _columns(model, data):
    """The model's columns of `data`, converted, and the names of the others:
    ([(name, array)], [name])."""
    binary, covariates = set(model.binary_columns), set(model.covariate_columns)
    columns, others = [], []
    _check_index(data, binary | covariates)
    for col, values, labels in _expand(_items(data), binary | covariates):
        known = _canonical(col)
        if known not in binary and known not in covariates:
            others.append((col, len(values)))
            continue
        columns.append((col, _convert(col, values, known in binary, labels)))
    return columns, others


def dataset(model, data, name="data"):
    """A _vbn.Dataset of `model` (a _vbn.Model) from `data`; the notes on it; and its
    columns as given, {canonical name: array}, for observed_data (None if unknown)."""
    if isinstance(data, (str, os.PathLike)):
        d = _vbn.Dataset.from_csv_file(model, os.fspath(data))
        try:
            import pandas as pd
            columns, _ = _columns(model, pd.read_csv(data, float_precision="round_trip"))
        except (ImportError, ValueError):
            columns = None  # vbn's reader took the file; pandas need not, and observed_data is optional
        return d, list(d.notes), None if columns is None else {_canonical(n): v for n, v in columns}
    columns, others = _columns(model, data)
    # The columns the model does not use go to the library by name only (their values are
    # never read): it notes them as ignored, and names one as the likely typo when a
    # model's column is missing, as for a CSV file.
    unused = [(col, np.full(n, np.nan)) for col, n in others]
    d = _vbn.Dataset.from_columns(model, columns + unused, name)
    return d, list(d.notes), {_canonical(n): v for n, v in columns}
