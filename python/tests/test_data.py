"""Data from Python: codes, missing values, and errors naming the column and the row."""

import math

import numpy as np
import pandas as pd
import pytest
import vbn

COIN = vbn.Model.from_string("node y ~ logistic(b);  node z ~ logistic(c + d * y);  b ~ normal(0, 2);  c ~ normal(0, 1);  d ~ normal(0, 1);",
                             "coin")
Y = [1, 1, -1, 1, -1, 1, 1]
Z = [1, -1, -1, 1, 1, 1, -1]


def vb_mean(data):
    return COIN.vb(data, seed=1, quiet=True).mean.to_numpy()


def test_every_coding_gives_the_same_data():
    reference = vb_mean({"y": Y, "z": Z})
    as01 = {"y": [max(v, 0) for v in Y], "z": [float(max(v, 0)) for v in Z]}
    as_bool = pd.DataFrame({"y": [v > 0 for v in Y], "z": np.array(Z) > 0})
    for data in (as01, as_bool, pd.DataFrame({"z": Z, "y": Y, "id": [f"r{i}" for i in range(7)]})):
        np.testing.assert_array_equal(vb_mean(data), reference)


def test_missing_values_are_summed_out():
    # z missing in a row leaves y's evidence alone: the row (y, NaN) is the row y of a model
    # without z, so adding it moves b exactly as adding a y-only row would.
    full = {"y": Y, "z": Z}
    with_missing = {"y": Y + [1, 1, -1], "z": Z + [None, math.nan, pd.NA]}
    obj = pd.DataFrame({"y": pd.array(Y + [True, True, False], dtype=object), "z": pd.array(Z + [None] * 3, dtype="Int64")})
    a, b = vb_mean(with_missing), vb_mean(obj)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, vb_mean(full))
    assert np.all(np.isfinite(a))


def test_a_bad_value_names_column_and_row():
    with pytest.raises(vbn.DataError) as info:
        COIN.fit({"y": [1, -1, 2, 1], "z": [1, 1, 1, 1]}, quiet=True)
    e = info.value
    assert (e.column, e.row) == ("y", 2)
    assert "column 'y', row 2: 2 is not a value here" in str(e)
    with pytest.raises(vbn.DataError) as info:
        COIN.fit(pd.DataFrame({"y": [1, 0, "yes"], "z": [1, 1, 1]}, index=[10, 20, 30]), quiet=True)
    assert (info.value.column, info.value.row) == ("y", 2)
    assert "row 2 (index 30): 'yes'" in str(info.value)


def test_covariates_must_be_finite_numbers():
    m = vbn.Model.from_string("covariate x;  node y ~ logistic(a + b * x);  a ~ normal(0, 1);  b ~ normal(0, 1);", "reg")
    m.vb({"x": [0.5, -1.25, 2.0], "y": [1, -1, 1]}, seed=1, quiet=True)
    with pytest.raises(vbn.DataError) as info:
        m.vb({"x": [0.5, np.nan, 2.0], "y": [1, -1, 1]}, seed=1, quiet=True)
    assert (info.value.column, info.value.row) == ("x", 1)
    assert "a covariate takes a finite number" in str(info.value)


def test_a_missing_column_and_a_csv_path(root):
    with pytest.raises(vbn.DataError) as info:
        COIN.fit({"y": Y}, quiet=True)
    assert "z" in str(info.value)
    m = vbn.Model.from_file(root / "examples" / "wells" / "wells.vbn")
    frame = pd.read_csv(root / "examples" / "wells" / "wells.csv", float_precision="round_trip")
    q_path = m.vb(root / "examples" / "wells" / "wells.csv", seed=1, quiet=True)
    np.testing.assert_array_equal(q_path.mean.to_numpy(), m.vb(frame, seed=1, quiet=True).mean.to_numpy())
    with pytest.raises(vbn.DataError):
        m.vb([1, 2, 3], quiet=True)


def test_a_column_the_model_does_not_use_is_noted_and_named_as_a_typo(root, capsys):
    COIN.vb({"y": Y, "z": Z, "smokr": ["a"] * 7}, seed=1, quiet=False)
    assert "note: data: ignoring 1 column that the model does not use: 'smokr' (column 3)" in capsys.readouterr().err
    m = vbn.Model.from_file(root / "examples" / "wells" / "wells.vbn")
    frame = pd.read_csv(root / "examples" / "wells" / "wells.csv").rename(columns={"arsenic": "arsenik"})
    with pytest.raises(vbn.DataError) as info:
        m.vb(frame, quiet=True)
    assert "missing column for arsenic" in str(info.value)
    assert "column 'arsenik' is not in the model; did you mean 'arsenic'?" in str(info.value)


def test_a_matrix_under_an_array_name_gives_its_elements(root):
    m = vbn.Model.from_file(root / "examples/paper/sbn_3x8.vbn")
    frame = m.simulate(30, seed=2, quiet=True)
    v = frame[[f"v[{k}]" for k in range(1, 9)]].to_numpy()
    a = m.vb(frame, restarts=1, seed=1, quiet=True).mean
    b = m.vb({"v": v}, restarts=1, seed=1, quiet=True).mean
    np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    with pytest.raises(vbn.DataError) as info:
        m.vb({"v": np.where(v == 1, 2, v)}, restarts=1, seed=1, quiet=True)
    assert info.value.column.startswith("v[")


def test_a_csv_error_has_the_cli_message_and_its_parts(root, tmp_path):
    m = vbn.Model.from_file(root / "examples/wells/wells.vbn")
    path = tmp_path / "bad.csv"
    path.write_text("switched,dist100,arsenic\n1,0.5,1.5\n1,0.5,x\n")
    with pytest.raises(vbn.DataError) as info:
        m.vb(path, seed=1, quiet=True)
    e = info.value
    assert (e.file, e.line, e.row, e.column) == (str(path), 3, 3, 3)
    assert e.message.startswith("column 'arsenic': 'x' is not a finite real number")
    assert str(e).startswith(f"{path}:3:3: column 'arsenic'")


def test_a_column_kept_as_the_index_is_named(root):
    m = vbn.Model.from_file(root / "examples" / "wells" / "wells.vbn")
    frame = pd.read_csv(root / "examples" / "wells" / "wells.csv", float_precision="round_trip")
    with pytest.raises(vbn.DataError) as info:
        m.vb(frame.set_index("switched"), seed=1, quiet=True)
    assert "'switched' is the DataFrame's index" in str(info.value) and "reset_index()" in str(info.value)
    assert info.value.column == "switched"
    # An index named after nothing in the model is left alone.
    q = m.vb(frame.rename_axis("household"), seed=1, quiet=True)
    np.testing.assert_array_equal(q.mean.to_numpy(), m.vb(frame, seed=1, quiet=True).mean.to_numpy())
