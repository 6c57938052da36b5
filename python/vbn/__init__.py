"""vbn: Bayesian parameter estimation for logistic (sigmoid) belief networks.

    import vbn
    model = vbn.Model.from_file("examples/wells/wells.vbn")
    fit = model.fit(data_frame, seed=1)      # fit.draws["b"]: (chain, draw, 2); fit.summary
    q = model.vb(data_frame, seed=1)         # the variational Gaussian
    model.predict(new_rows, fit, target="y") # P(y = +1) per row

docs/python.md documents every call."""

from . import _vbn
from ._cmdstan import read_csv
from ._model import Model, ModelWarning
from ._results import FitResult, VBResult
from .errors import (CancelledError, DataError, Error, InferenceError, IoError, LimitError, ModelError,
                     UsageError)

__version__ = _vbn.version()


def methods():
    """{name: description} of the methods Model.fit takes, "auto" first."""
    return dict(_vbn.methods())


__all__ = ["Model", "ModelWarning", "FitResult", "VBResult", "Error", "UsageError", "ModelError", "DataError",
           "LimitError", "InferenceError", "IoError", "CancelledError", "methods",
           "read_csv"]
