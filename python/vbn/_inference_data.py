"""A fit as ArviZ's InferenceData schema: xarray Datasets for the groups posterior,
sample_stats, observed_data and (with log_lik) log_likelihood, with dims chain and draw and,
for each parameter or node array, NAME_dim_0, NAME_dim_1 ... as ArviZ names them (with the
coordinates 0, 1, ... ArviZ gives them). Written as
netCDF4 groups the way InferenceData.to_netcdf writes them, so that arviz.from_netcdf (and
xarray.open_dataset(path, group=...)) reads the file. Needs xarray and netCDF4."""

import datetime

import numpy as np

from ._results import by_parameter


def _attrs(fit):
    from . import __version__
    return {"created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(), "inference_library": "vbn",
            "inference_library_version": __version__, "method": fit.method, "seed": str(fit.seed)}


def _dataset(arrays, leading, coords, attrs):
    """xarray.Dataset of {name: array (*leading sizes, *shape)}, extra dims named NAME_dim_i."""
    import xarray as xr
    variables, coords = {}, dict(coords)
    for name, arr in arrays.items():
        extra = [f"{name}_dim_{i}" for i in range(arr.ndim - len(leading))]
        variables[name] = (list(leading) + extra, arr)
        # Each extra dim gets its coordinate 0, 1, ..., as ArviZ gives dims without coords.
        coords.update({dim: np.arange(arr.shape[len(leading) + i]) for i, dim in enumerate(extra)})
    return xr.Dataset(variables, coords=coords, attrs=attrs)


def groups(fit):
    """{group name: xarray.Dataset}: arviz.InferenceData(**groups(fit)) is the fit in ArviZ."""
    # The sizes from any (chain, draw, ...) array: files without an lp__ column have no lp.
    chains, draws = next(iter({**fit.sample_stats, **fit.draws}.values())).shape[:2]
    coords = {"chain": np.arange(chains), "draw": np.arange(draws)}
    attrs = _attrs(fit)
    out = {"posterior": _dataset(fit.draws, ("chain", "draw"), coords, attrs),
           "sample_stats": _dataset(fit.sample_stats, ("chain", "draw"), coords, attrs)}
    if fit.observed is not None:
        names = list(fit.observed)
        values = np.column_stack([fit.observed[n] for n in names]) if names else np.empty((0, 0))
        observed = by_parameter(names, values)
        out["observed_data"] = _dataset(observed, ("row",), {"row": np.arange(values.shape[0])}, attrs)
    if fit.log_lik is not None:
        coords_rows = dict(coords, row=np.arange(fit.log_lik.shape[2]))
        out["log_likelihood"] = _dataset({"log_lik": fit.log_lik}, ("chain", "draw", "row"), coords_rows, attrs)
    return out


def to_netcdf(fit, path):
    """Each group as a netCDF4 group of one file, as InferenceData.to_netcdf writes it."""
    mode = "w"
    for name, data in groups(fit).items():
        data.to_netcdf(path, mode=mode, group=name, engine="netcdf4")
        mode = "a"
    return path
