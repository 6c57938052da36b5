"""vbn.Model: a checked model and the jobs of the command line on it (fit, vb, predict,
evidence, simulate), over the embedding API."""

import json
import os
import secrets
import sys
import warnings as _warnings

import numpy as np
import pandas as pd

from . import _vbn
from ._data import dataset
from ._progress import ConsoleProgress
from ._results import FitResult, VBResult, by_parameter, group_parameters
from .errors import UsageError


class ModelWarning(UserWarning):
    """A warning of the model compiler (the text names line and column)."""


def _seed(seed, quiet):
    """The given seed, or a fresh one said on stderr, as the command line does."""
    if seed is not None:
        if int(seed) < 0 or int(seed) >= 2**64:
            raise UsageError(f"seed must be in [0, 2^64), not {seed}")
        return int(seed)
    fresh = secrets.randbelow(2**32)
    if not quiet:
        print(f"note: seed {fresh} (pass seed={fresh} to repeat this run)", file=sys.stderr)
    return fresh


def _variational_options(restarts, seed, tolerance=1e-9, max_iterations=2000):
    o = _vbn.VariationalOptions()
    o.restarts, o.seed, o.tolerance, o.max_iterations = restarts, seed, tolerance, max_iterations
    return o


def _print_log(quiet):
    def log(level, message):
        if level == "warning" or not quiet:
            print(f"{level}: {message}", file=sys.stderr)
    return log


def _params_json(params):
    """{"w": [2, -1], "W": 2-d array, "b": 0.5} as the JSON `--params` reads."""
    def plain(v):
        return np.asarray(v, dtype=float).tolist()
    return json.dumps({str(k): plain(v) for k, v in params.items()})


class Model:
    """A checked model (docs/language.md). Immutable; build it with from_file or from_string."""

    def __init__(self, raw):
        self._raw = raw
        if raw.warnings:
            _warnings.warn(raw.warnings, ModelWarning, stacklevel=3)

    @classmethod
    def from_file(cls, path):
        """Reads and compiles a .vbn file; errors raise ModelError (or IoError) naming the path."""
        return cls(_vbn.Model.from_file(os.fspath(path)))

    @classmethod
    def from_string(cls, text, name="model"):
        """Compiles model text; `name` is what messages call it ("name:3:14: error: ...")."""
        return cls(_vbn.Model.from_string(text, name))

    name = property(lambda self: self._raw.name)
    warnings = property(lambda self: self._raw.warnings, doc="The compiler's warnings, formatted like errors.")
    dimension = property(lambda self: self._raw.dimension, doc="The number of learned weights.")
    parameter_names = property(lambda self: list(self._raw.parameter_names), doc="'w[1]', 'W[2,3]': the order of results.")
    binary_columns = property(lambda self: list(self._raw.binary_columns))
    covariate_columns = property(lambda self: list(self._raw.covariate_columns))

    @property
    def parameter_shapes(self):
        """{name: shape} of each parameter, () for a scalar."""
        return {k: shape for k, (shape, _) in group_parameters(self._raw.parameter_names).items()}

    def describe(self):
        """The network in canonical form, as `vbn check` prints it."""
        return self._raw.describe()

    def __repr__(self):
        return f"<vbn.Model {self.name!r}: {self.dimension} parameters>"

    def _data(self, data, quiet=True, keep=None):
        d, notes, columns = dataset(self._raw, data)
        if not quiet:
            for n in notes:
                print(f"note: {n}", file=sys.stderr)
        if keep is not None and columns is not None:
            # In the model's column order, as vbn reads them.
            keep.update((c, columns[c]) for c in self.binary_columns + self.covariate_columns if c in columns)
        return d

    def fit(self, data, method="auto", chains=4, draws=None, warmup=1000, seed=None, threads=None, *, restarts=0,
            adapt_delta=0.0, overrelax=-0.3, relabel="pivot", log_lik=False, progress=True, quiet=False,
            max_draws=None):
        """`vbn fit`: the variational fit, then MCMC chains. The same seed gives the draws
        `vbn fit --seed` gives, whatever `threads`. draws and max_draws as `vbn fit`'s
        --draws and --max-draws: draws None is 1000, run on up to 4000 while some R-hat is
        above 1.01 or some ESS below 100 per chain; draws given, exactly that many unless
        max_draws says more. progress: True (print to stderr), False, or a function (chain,
        iteration, iterations, warmup) called from the chains' threads. Ctrl-C stops the
        chains and raises KeyboardInterrupt."""
        if max_draws is None:
            max_draws = 4000 if draws is None else 0
        draws = 1000 if draws is None else draws
        if max_draws and max_draws < draws:
            raise UsageError(f"max_draws {max_draws} is below draws {draws}: give at least as many")
        seed = _seed(seed, quiet)
        o = _vbn.FitOptions()
        o.method, o.chains, o.draws, o.warmup, o.seed = method, chains, draws, warmup, seed
        o.max_draws = max_draws
        o.threads = threads if threads is not None else max(1, min(chains, os.cpu_count() or 1))
        o.adapt_delta, o.overrelax, o.relabel, o.log_lik = adapt_delta, overrelax, relabel, log_lik
        o.variational = _variational_options(restarts, seed)
        observed = {}
        d = self._data(data, quiet, keep=observed)
        show = ConsoleProgress(chains, warmup, draws) if progress is True and not quiet else None
        hook = show if show is not None else (progress if callable(progress) else None)
        try:
            raw = _vbn.fit(self._raw, d, o, hook, 0.5 if hook else 0.1, _print_log(quiet))
        finally:
            if show is not None:
                show.finish()
        options = dict(method=method, chains=chains, draws=draws, max_draws=max_draws, warmup=warmup, seed=seed,
                       threads=o.threads,
                       restarts=restarts, adapt_delta=adapt_delta, overrelax=overrelax, relabel=relabel, log_lik=log_lik)
        return FitResult(raw, seed, options, observed or None)

    def vb(self, data, restarts=0, seed=None, *, tolerance=1e-9, max_iterations=2000, quiet=False):
        """The variational fit alone (the Gaussian `vbn vb` reports as vb_mean and vb_sd)."""
        seed = _seed(seed, quiet)
        d = self._data(data, quiet)
        raw = _vbn.variational(self._raw, d, _variational_options(restarts, seed, tolerance, max_iterations))
        return VBResult(raw, self.parameter_names, seed)

    def predict(self, data, posterior, target=None, seed=None, *, vb_draws=4000, quiet=False):
        """`vbn predict`: P(node = +1 | the row's observed values, the posterior) for each row
        of `data` (missing values mark what is unobserved). posterior: a FitResult, a
        VBResult, or an array of draws (draws x parameter elements). Returns a DataFrame
        (row, node, p, truth) with the scores, when some truth is known, in .attrs["scores"]."""
        o = _vbn.PredictOptions()
        o.target = target or ""
        o.vb_draws = vb_draws
        rows = self._data(data, quiet)
        if isinstance(posterior, VBResult):
            o.seed = _seed(seed, quiet)
            raw = _vbn.predict_variational(self._raw, rows, posterior._raw, o)
        else:
            draws = posterior.draws_matrix() if isinstance(posterior, FitResult) else np.asarray(posterior, dtype=float)
            if draws.ndim != 2:
                raise UsageError(f"predict: draws must be a matrix (draws x {self.dimension} parameters), not {draws.ndim}-d")
            raw = _vbn.predict_draws(self._raw, rows, draws, o)
        p = raw.predictions
        frame = pd.DataFrame({"row": [x.row for x in p], "node": [x.node for x in p], "p": [x.p for x in p],
                              "truth": [x.truth if x.truth else np.nan for x in p]})
        s = raw.scores
        frame.attrs["scores"] = None if s is None else dict(scored=s.scored, accuracy=s.accuracy, log_loss=s.log_loss,
                                                            brier=s.brier)
        frame.attrs["draws"] = raw.draws
        return frame

    def evidence(self, data, draws=4000, seed=None, *, restarts=0, quiet=False):
        """log p(data) as `vbn compare` estimates it: a dict with log_evidence, se, pareto_k,
        elbo, draws, from_mode, and tempered and runs_rhat (where k-hat is above 0.7 the
        estimate comes from tempering, reliable while runs_rhat is below 1.01)."""
        o = _vbn.EvidenceOptions()
        o.draws = draws
        o.seed = _seed(seed, quiet)
        o.variational = _variational_options(restarts, o.seed)
        r = _vbn.evidence(self._raw, self._data(data, quiet), o)
        return dict(log_evidence=r.log_evidence, se=r.se, pareto_k=r.pareto_k, elbo=r.elbo, draws=r.draws,
                    from_mode=r.from_mode, tempered=r.tempered, runs_rhat=r.runs_rhat)

    def simulate(self, rows, seed=None, params=None, *, include_hidden=False, quiet=False):
        """`vbn simulate`: parameters from their priors (or `params`, {"w": [2, -1], ...}; any
        left out are drawn), then `rows` rows sampled forward. Returns a DataFrame of ±1
        (covariates N(0, 1)) whose .attrs["parameters"] holds the values used, by name."""
        o = _vbn.SimulateOptions()
        if int(rows) < 1:
            raise UsageError(f"simulate: rows must be at least 1, not {rows}")
        o.rows, o.seed, o.include_hidden = int(rows), _seed(seed, quiet), include_hidden
        o.params_json = _params_json(params) if params else ""
        raw = _vbn.simulate(self._raw, o)
        if not quiet:
            for n in raw.notes:
                print(f"note: {n}", file=sys.stderr)
        frame = pd.DataFrame({c.name: np.array(c.values) for c in raw.columns})
        for c in frame.columns:
            if c not in self.covariate_columns:
                frame[c] = frame[c].astype(int)
        frame.attrs["parameters"] = by_parameter(self.parameter_names, np.array(raw.parameters))
        frame.attrs["seed"] = o.seed
        return frame
