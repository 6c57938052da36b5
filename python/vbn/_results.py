"""Results as numpy arrays and pandas DataFrames, built from the module's plain structs."""

import re

import numpy as np
import pandas as pd

_ELEMENT = re.compile(r"^([^\[]+)(?:\[([\d,]+)\])?$")


def group_parameters(names):
    """{base name: (shape, [(position in names, 0-based index tuple), ...])}, in the order
    the names first appear: 'w[2]' is element (1,) of w, 'W[2,3]' element (1, 2) of W."""
    groups = {}
    for k, name in enumerate(names):
        m = _ELEMENT.match(name)
        base, idx = m[1], tuple(int(i) - 1 for i in m[2].split(",")) if m[2] else ()
        groups.setdefault(base, []).append((k, idx))
    out = {}
    for base, elems in groups.items():
        shape = tuple(max(i[d] for _, i in elems) + 1 for d in range(len(elems[0][1])))
        out[base] = (shape, elems)
    return out


def by_parameter(names, values):
    """values (..., len(names)) as {base name: array (..., *shape)}."""
    out = {}
    for base, (shape, elems) in group_parameters(names).items():
        arr = np.full(values.shape[:-1] + shape, np.nan)
        for k, idx in elems:
            arr[(Ellipsis,) + idx] = values[..., k]
        out[base] = arr
    return out


# CmdStan's sampler columns by their names in ArviZ's sample_stats group. lp and
# acceptance_rate are filled by every method; the others only by NUTS (the other kernels
# write zeros there, so they are left out).
STATS_EVERY_METHOD = {"lp__": "lp", "accept_stat__": "acceptance_rate"}
STATS_NUTS = {"stepsize__": "step_size", "treedepth__": "tree_depth", "n_leapfrog__": "n_steps",
              "divergent__": "diverging", "energy__": "energy"}


def sample_stats(method, column):
    """{ArviZ name: array (chain, draw)} of a run of `method`, column(CmdStan column name)
    giving that column's values as (chain, draw), or None when there are none."""
    out = {}
    for csv_name, name in dict(STATS_EVERY_METHOD, **(STATS_NUTS if method == "nuts" else {})).items():
        values = column(csv_name)
        if values is not None:
            out[name] = values != 0 if name == "diverging" else values
    return out


def _chain_stat(chain, csv_name):
    """A _vbn.Chain's values of a sampler column: lp__ is log_density, the others the
    SamplerStats field of the column's name (accept_stat__ is sampler.accept_stat)."""
    return chain.log_density if csv_name == "lp__" else getattr(chain.sampler, csv_name[:-2])


SUMMARY_COLUMNS = ["mean", "sd", "mcse", "5%", "50%", "95%", "ess_bulk", "ess_tail", "rhat"]


def summary_frame(rows):
    data = [[r.mean, r.sd, r.mcse_mean, r.q5, r.q50, r.q95, r.ess_bulk, r.ess_tail, r.rhat] for r in rows]
    return pd.DataFrame(data, columns=SUMMARY_COLUMNS, index=pd.Index([r.name for r in rows], name="name"))


def acceptance_frame(acceptance):
    return pd.DataFrame({"kernel": [a.kernel for a in acceptance], "proposed": [a.proposed for a in acceptance],
                         "accepted": [a.accepted for a in acceptance],
                         "rate": [a.accepted / a.proposed if a.proposed else 0.0 for a in acceptance]})


class VBResult:
    """The variational posterior (Model.vb): a Gaussian over the weights.

    mean, sd: Series by parameter name; covariance: a DataFrame; elbo: the lower bound on
    log p(data); summary: mean and sd as a DataFrame; converged, iterations, restart_elbos,
    elbo_trace, seconds; seed."""

    def __init__(self, raw, names, seed):
        self._raw = raw
        self.names = list(names)
        self.seed = seed
        self.mean = pd.Series(np.array(raw.mean), index=self.names, name="mean")
        self.covariance = pd.DataFrame(np.array(raw.covariance), index=self.names, columns=self.names)
        self.sd = pd.Series(np.sqrt(np.diag(self.covariance.to_numpy())), index=self.names, name="sd")
        self.summary = pd.DataFrame({"mean": self.mean, "sd": self.sd}).rename_axis("name")
        self.elbo = raw.elbo
        self.elbo_trace = list(raw.elbo_trace)
        self.restart_elbos = list(raw.restart_elbos)
        self.iterations = raw.iterations
        self.converged = raw.converged
        self.seconds = raw.seconds

    def __repr__(self):
        return f"<vbn.VBResult ELBO {self.elbo:.6g}, {len(self.names)} parameters>\n{self.summary}"


class FitResult:
    """A fit (Model.fit): the variational fit, then MCMC chains.

    draws: {name: array (chain, draw, *shape)}; summary: the table `vbn fit` prints, as a
    DataFrame by parameter element; sample_stats: {name: array (chain, draw)}, the sampler's
    statistics of each draw in ArviZ's names: lp (the log posterior up to a constant) and
    acceptance_rate, and for NUTS also step_size, tree_depth, n_steps, diverging (bool) and
    energy; chain_info: a DataFrame per chain; log_lik:
    (chain, draw, row) with log_lik=True, else None; and the facts of the run: method,
    kernel, seed, chains, notes, warnings, acceptance, variational, times, table; and modes, a
    DataFrame of the minor modes the symmetry jumps visited (flip, mass, mcse: one row per
    copy of the major mode with those hidden nodes' signs flipped; no rows when none ran),
    with each copy's mass by importance sampling from the major copy's draws (importance,
    importance_mcse, and importance_khat, reliable below 0.7; NaN where not computed)."""

    def __init__(self, raw, seed, options, observed=None):
        self.observed = observed  # {column: array} of the data, ±1 / NaN for nodes
        ok = [c for c in raw.chains if not c.error]
        self.method, self.kernel, self.seed = raw.method, raw.kernel, seed
        self.names = list(raw.names)
        self.options = options
        self.chains = len(ok)
        flat = np.stack([np.array(c.draws) for c in ok]) if ok else np.empty((0, 0, len(self.names)))
        self._flat = flat  # (chain, draw, element)
        self.draws = by_parameter(self.names, flat)
        def stat(column):
            return np.stack([np.array(_chain_stat(c, column)) for c in ok]) if ok else np.empty((0, 0))
        self.sample_stats = sample_stats(raw.method, stat)
        self.log_lik = np.stack([np.array(c.log_lik) for c in ok]) if options.get("log_lik") and ok else None
        self.summary = summary_frame(raw.summary)
        self.acceptance = acceptance_frame(raw.acceptance)
        self.chain_info = pd.DataFrame({
            "chain": [c.chain + 1 for c in raw.chains], "divergent": [c.divergent for c in raw.chains],
            "regenerations": [c.regenerations for c in raw.chains],
            "warmup_seconds": [c.warmup_seconds for c in raw.chains],
            "sampling_seconds": [c.sampling_seconds for c in raw.chains], "error": [c.error for c in raw.chains]})
        self.variational = VBResult(raw.variational, self.names, seed)
        self.times = {"target": raw.target_seconds, "variational": raw.variational.seconds, "proposal": raw.proposal_seconds,
                      "warmup": raw.warmup_seconds, "sampling": raw.sampling_seconds, "summary": raw.summary_seconds}
        self.relabel, self.relabelled_draws = raw.relabel, raw.relabelled_draws
        self.modes = pd.DataFrame({"flip": [m.flip for m in raw.modes], "mass": [m.mass for m in raw.modes],
                                   "mcse": [m.mcse for m in raw.modes],
                                   "importance": [m.importance for m in raw.modes],
                                   "importance_mcse": [m.importance_mcse for m in raw.modes],
                                   "importance_khat": [m.importance_khat for m in raw.modes]})
        self.notes, self.warnings = list(raw.notes), list(raw.warnings)
        self.table = raw.table

    def draws_matrix(self):
        """Every kept draw as one row, chains one after another: (chains * draws, elements)
        in the order of Model.parameter_names."""
        return self._flat.reshape(-1, self._flat.shape[-1])

    def draws_frame(self):
        """The draws as a DataFrame: columns chain, draw (1-based), lp, then one per element."""
        c, d, k = self._flat.shape
        frame = pd.DataFrame(self._flat.reshape(-1, k), columns=self.names)
        frame.insert(0, "lp", self.sample_stats["lp"].reshape(-1))
        frame.insert(0, "draw", np.tile(np.arange(1, d + 1), c))
        frame.insert(0, "chain", np.repeat(np.arange(1, c + 1), d))
        return frame

    def to_inference_data(self):
        """The fit in ArviZ's InferenceData schema: {group: xarray.Dataset} for posterior,
        sample_stats, observed_data and (with log_lik) log_likelihood; with ArviZ installed,
        arviz.InferenceData(**fit.to_inference_data()). Needs xarray."""
        from ._inference_data import groups
        return groups(self)

    def to_netcdf(self, path):
        """Writes to_inference_data()'s groups to a netCDF4 file as ArviZ's to_netcdf does
        (arviz.from_netcdf reads it; so does xarray.open_dataset(path, group="posterior")).
        Needs xarray and netCDF4. Returns path."""
        from ._inference_data import to_netcdf
        return to_netcdf(self, path)

    def __str__(self):
        return self.table

    def __repr__(self):
        return f"<vbn.FitResult method {self.method}, {self.chains} chains, seed {self.seed}>\n{self.table}"
