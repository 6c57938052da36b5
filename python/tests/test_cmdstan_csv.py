"""python3 -m vbn.netcdf / vbn.read_csv: the command line's CSV files as InferenceData."""

import subprocess
import sys

import netCDF4
import numpy as np
import pytest
import vbn
import xarray as xr


def cli_fit(vbn_binary, root, tmp_path, *extra, model="examples/paper/sbn_3x8"):
    out = tmp_path / "fit.csv"
    subprocess.run([str(vbn_binary), "fit", str(root / f"{model}.vbn"), "--data",
                    str(root / f"{model}.csv"), "--seed", "3", "--quiet", "--chains", "2",
                    "--warmup", "60", "--draws", "30", "--output", str(out), *extra], check=True,
                   capture_output=True)
    return [tmp_path / "fit_1.csv", tmp_path / "fit_2.csv"]


def test_nuts_files_give_every_group_and_the_values_of_the_csv(vbn_binary, root, tmp_path):
    files = cli_fit(vbn_binary, root, tmp_path, "--method", "nuts", "--log-lik")
    out = tmp_path / "fit.nc"
    done = subprocess.run([sys.executable, "-m", "vbn.netcdf", str(out), *map(str, files)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2 chains of 30 draws (posterior, sample_stats, log_likelihood)" in done.stdout
    with netCDF4.Dataset(out) as nc:
        assert list(nc.groups) == ["posterior", "sample_stats", "log_likelihood"]
        assert nc["posterior"].inference_library == "vbn" and nc["posterior"].method == "nuts"
    post = xr.open_dataset(out, group="posterior")
    assert post["W"].dims == ("chain", "draw", "W_dim_0", "W_dim_1") and post["W"].shape == (2, 30, 8, 3)
    assert list(post["W_dim_0"].values) == list(range(8)) and list(post["W_dim_1"].values) == [0, 1, 2]
    import pandas as pd
    chain2 = pd.read_csv(files[1], comment="#", float_precision="round_trip")
    np.testing.assert_array_equal(post["W"].values[1, :, 1, 2], chain2["W.2.3"].to_numpy())
    np.testing.assert_array_equal(post["b"].values[1, :, 7], chain2["b.8"].to_numpy())
    stats = xr.open_dataset(out, group="sample_stats")
    assert set(stats.data_vars) == {"lp", "acceptance_rate", "step_size", "tree_depth", "n_steps", "diverging",
                                    "energy"}
    assert stats["diverging"].dtype == bool
    np.testing.assert_array_equal(stats["n_steps"].values[1], chain2["n_leapfrog__"].to_numpy())
    assert (stats["step_size"].values > 0).all()
    ll = xr.open_dataset(out, group="log_likelihood")
    rows = sum(1 for line in open(root / "examples/paper/sbn_3x8.csv")) - 1
    assert ll["log_lik"].dims == ("chain", "draw", "row") and ll["log_lik"].shape == (2, 30, rows)
    np.testing.assert_array_equal(ll["log_lik"].values[1, :, rows - 1], chain2[f"log_lik.{rows}"].to_numpy())


def test_the_files_of_a_python_fit_with_the_same_seed_read_back_as_its_draws(vbn_binary, root, tmp_path):
    files = cli_fit(vbn_binary, root, tmp_path, model="examples/wells/wells")
    back = vbn.read_csv(*files)
    m = vbn.Model.from_file(root / "examples/wells/wells.vbn")
    fit = m.fit(root / "examples/wells/wells.csv", seed=3, chains=2, warmup=60, draws=30, quiet=True)
    assert back.method == fit.method and back.seed == "3"
    assert set(back.draws) == set(fit.draws)
    for name in fit.draws:
        np.testing.assert_array_equal(back.draws[name], fit.draws[name])
    # Not NUTS (varblock): only the statistics every kernel fills; no log_lik columns, no group.
    assert set(back.sample_stats) == {"lp", "acceptance_rate"}
    np.testing.assert_array_equal(back.sample_stats["lp"], fit.sample_stats["lp"])
    assert list(back.to_inference_data()) == ["posterior", "sample_stats"]


def first_draw_line(lines):
    """The 0-based index of a file's first draw line."""
    header = next(k for k, line in enumerate(lines) if line.startswith("lp__"))
    return next(k for k in range(header + 1, len(lines)) if not lines[k].startswith("#"))


def test_bad_files_are_errors_naming_the_file(vbn_binary, root, tmp_path):
    files = cli_fit(vbn_binary, root, tmp_path)
    short = tmp_path / "short.csv"
    lines = open(files[1]).readlines()
    last_draw = max(k for k, line in enumerate(lines) if not line.startswith("#"))
    short.write_text("".join(lines[:last_draw - 2] + lines[last_draw + 1:]))  # three draws fewer
    with pytest.raises(vbn.DataError, match="short.csv: 27 draws where .*fit_1.csv has 30"):
        vbn.read_csv(files[0], short)
    # What makes one file malformed is the library's reader's to say (vbn summary's): its
    # located message, the file and line as attributes.
    ragged = tmp_path / "ragged.csv"
    lines = open(files[0]).read().splitlines()
    first_draw = first_draw_line(lines)
    lines[first_draw] += ",1"
    ragged.write_text("\n".join(lines) + "\n")
    with pytest.raises(vbn.DataError, match=rf"ragged.csv:{first_draw + 1}: a draw has \d+ values but the header has "
                                            r"\d+ columns") as e:
        vbn.read_csv(ragged)
    assert e.value.file.endswith("ragged.csv") and e.value.line == first_draw + 1
    summary = subprocess.run([str(vbn_binary), "summary", str(ragged)], capture_output=True, text=True)
    assert summary.returncode != 0 and str(e.value) in summary.stderr
    with pytest.raises(vbn.DataError, match=r"model.vbn:2: a draw has 1 values but the header has 3 columns"):
        vbn.read_csv(root / "tests/corpus/sbn2/model.vbn")
    with pytest.raises(vbn.IoError, match="no such file '.*nothing.csv'"):
        vbn.read_csv(tmp_path / "nothing.csv")
    with pytest.raises(vbn.UsageError, match="no CSV files given"):
        vbn.read_csv()
    done = subprocess.run([sys.executable, "-m", "vbn.netcdf", str(tmp_path / "x.nc"), str(short), str(files[0])],
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "short.csv" in done.stderr
    usage = subprocess.run([sys.executable, "-m", "vbn.netcdf", str(files[0])], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: python3 -m vbn.netcdf")


def test_a_value_that_is_not_a_number_is_located_by_line_and_column(vbn_binary, root, tmp_path):
    files = cli_fit(vbn_binary, root, tmp_path)
    lines = open(files[1]).read().splitlines()
    at = first_draw_line(lines) + 4
    header = next(line for line in lines if line.startswith("lp__")).split(",")
    column = header.index("W.2.3")
    fields = lines[at].split(",")
    fields[column] = "0.5x"
    lines[at] = ",".join(fields)
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(vbn.DataError) as e:
        vbn.read_csv(files[0], bad)
    assert str(e.value) == f"{bad}:{at + 1}: column {column + 1} (W.2.3): '0.5x' is not a number"
    assert (e.value.file, e.value.line, e.value.column) == (str(bad), at + 1, column + 1)
    done = subprocess.run([sys.executable, "-m", "vbn.netcdf", str(tmp_path / "x.nc"), str(files[0]), str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr == f"error: {e.value}\n"
    assert not (tmp_path / "x.nc").exists()
