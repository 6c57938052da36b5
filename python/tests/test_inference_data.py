"""FitResult.to_netcdf: ArviZ's InferenceData groups as netCDF4 groups, read back with xarray."""

import netCDF4
import numpy as np
import pytest
import vbn
import xarray as xr


@pytest.fixture(scope="module")
def sbn(root):
    m = vbn.Model.from_file(root / "examples/paper/sbn_3x8.vbn")
    data = m.simulate(60, seed=38, quiet=True)
    data.iloc[3, 2] = np.nan  # a missing value stays missing in observed_data
    return m, data


def test_groups_read_back_with_their_dims_and_values(sbn, tmp_path):
    m, data = sbn
    fit = m.fit(data, chains=2, draws=40, warmup=40, seed=5, log_lik=True, quiet=True)
    path = fit.to_netcdf(tmp_path / "fit.nc")
    with netCDF4.Dataset(path) as nc:
        assert list(nc.groups) == ["posterior", "sample_stats", "observed_data", "log_likelihood"]
    post = xr.open_dataset(path, group="posterior")
    assert post["W"].dims == ("chain", "draw", "W_dim_0", "W_dim_1")
    assert post["W"].shape == (2, 40, 8, 3) and post["b"].shape == (2, 40, 8)
    np.testing.assert_array_equal(post["W"].values, fit.draws["W"])
    assert list(post["chain"].values) == [0, 1] and list(post["draw"].values) == list(range(40))
    assert post.attrs["inference_library"] == "vbn" and post.attrs["seed"] == "5"
    stats = xr.open_dataset(path, group="sample_stats")
    assert set(stats.data_vars) == set(fit.sample_stats)
    for name in fit.sample_stats:
        np.testing.assert_array_equal(stats[name].values, fit.sample_stats[name])
    obs = xr.open_dataset(path, group="observed_data")
    assert obs["v"].dims == ("row", "v_dim_0") and obs["v"].shape == (60, 8)
    expected = data[[f"v[{k}]" for k in range(1, 9)]].to_numpy(dtype=float)
    np.testing.assert_array_equal(obs["v"].values, expected)  # NaN where missing
    assert np.isnan(obs["v"].values[3, 2])
    ll = xr.open_dataset(path, group="log_likelihood")
    assert ll["log_lik"].dims == ("chain", "draw", "row")
    np.testing.assert_array_equal(ll["log_lik"].values, fit.log_lik)


def test_without_log_lik_there_is_no_log_likelihood_group(tmp_path, root):
    m = vbn.Model.from_file(root / "examples/wells/wells.vbn")
    fit = m.fit(root / "examples/wells/wells.csv", chains=1, draws=20, warmup=20, seed=1, quiet=True)
    groups = fit.to_inference_data()
    assert list(groups) == ["posterior", "sample_stats", "observed_data"]
    # From a CSV path the observed data are read back too; a scalar parameter has no extra dim.
    assert groups["posterior"]["a"].dims == ("chain", "draw")
    assert groups["observed_data"]["switched"].shape == (3020,)
    assert set(np.unique(groups["observed_data"]["switched"].values)) == {-1.0, 1.0}
    fit.to_netcdf(tmp_path / "w.nc")
    assert "log_likelihood" not in netCDF4.Dataset(tmp_path / "w.nc").groups
