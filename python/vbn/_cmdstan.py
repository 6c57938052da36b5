"""Reading the CmdStan CSV files `vbn fit --output` writes, for the InferenceData converter
(python3 -m vbn.netcdf). Each file is one chain, read by the library's reader
(vbn::read_draws, the one `vbn summary` and `vbn loo` use), so that one reader decides what a
valid file is and its errors name the file and line; here the files are only checked to be
chains of one run."""

import os

import numpy as np

from . import _vbn
from ._data import _canonical
from ._results import by_parameter, sample_stats
from .errors import DataError, UsageError


def _method(chain):
    """The method a file records. CmdStan's spelling: NUTS is `algorithm = hmc` with
    `engine = nuts`; vbn's own kernels write their name as the algorithm."""
    algorithm = chain.setting("algorithm") or ""
    return (chain.setting("engine") or algorithm) if algorithm == "hmc" else algorithm


def _check_one_run(chains):
    first = chains[0]
    if not first.parameter_columns:
        raise DataError(f"{first.path}: the file has no parameter columns")
    for c in chains[1:]:
        if c.parameter_columns != first.parameter_columns or c.sampler_columns != first.sampler_columns:
            raise DataError(f"{c.path}: its columns differ from {first.path}'s: not chains of one run")
        if c.draws.shape[0] != first.draws.shape[0]:
            raise DataError(f"{c.path}: {c.draws.shape[0]} draws where {first.path} has {first.draws.shape[0]}")


class CsvFit:
    """The chains of one run read back from its CSV files, with the attributes the
    InferenceData writer reads: draws {name: (chain, draw, *shape)}, sample_stats
    {name: (chain, draw)}, log_lik (chain, draw, row) or None, observed (None), method, seed,
    chains and draws_per_chain."""

    def __init__(self, paths):
        if not paths:
            raise UsageError("no CSV files given")
        chains = [_vbn.read_draws(os.fspath(p)) for p in paths]
        _check_one_run(chains)
        first = chains[0]
        self.method, self.seed = _method(first), first.setting("seed") or ""
        self.chains, self.draws_per_chain = len(chains), first.draws.shape[0]
        self.observed = None
        sampler = np.stack([np.asarray(c.sampler) for c in chains])  # (chain, draw, sampler column)
        at = {name: k for k, name in enumerate(first.sampler_columns)}
        self.sample_stats = sample_stats(self.method, lambda c: sampler[:, :, at[c]] if c in at else None)
        values = np.stack([np.asarray(c.draws) for c in chains])  # (chain, draw, parameter column)
        ll = [k for k, name in enumerate(first.parameter_columns) if name.startswith("log_lik.")]
        self.log_lik = values[:, :, ll] if ll else None
        params = [k for k in range(len(first.parameter_columns)) if k not in ll]
        self.names = [_canonical(first.parameter_columns[k]) for k in params]
        self.draws = by_parameter(self.names, values[:, :, params])

    def to_inference_data(self):
        from ._inference_data import groups
        return groups(self)

    def to_netcdf(self, path):
        from ._inference_data import to_netcdf
        return to_netcdf(self, path)


def read_csv(*paths):
    """The chains of one `vbn fit --output` run from their CSV files (FILE_1.csv, FILE_2.csv,
    ...), as an object with draws, sample_stats, log_lik, to_inference_data() and to_netcdf(path)."""
    return CsvFit(paths)
