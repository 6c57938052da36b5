"""Reading the CmdStan CSV files `vbn fit --output` writes, for the InferenceData converter
(python3 -m vbn.netcdf). Each file is one chain: `#` comment lines (the run's settings, one
`key = value` per line), a header of column names, one row per kept draw."""

import pathlib
import re

import numpy as np

from ._results import by_parameter, sample_stats
from .errors import IoError

_SETTING = re.compile(r"^#\s*([A-Za-z_]+)\s*=\s*(.*?)\s*$")


def _element_name(column):
    """A CSV column (b.1, W.2.3) as the element name the package uses (b[1], W[2,3])."""
    base, *idx = column.split(".")
    return f"{base}[{','.join(idx)}]" if idx else base


class Chain:
    """One file: settings {key: value} from its comments, column names, values (draw, column)."""

    def __init__(self, path):
        self.path = pathlib.Path(path)
        try:
            lines = self.path.read_text().splitlines()
        except OSError as e:
            raise IoError(f"{path}: cannot read it: {e.strerror}") from None
        self.settings, rows, self.columns = {}, [], None
        for number, line in enumerate(lines, start=1):
            if line.startswith("#") or not line.strip():
                m = _SETTING.match(line)
                if m and self.columns is None:
                    self.settings.setdefault(m[1], m[2])
            elif self.columns is None:
                self.columns = line.split(",")
                if "lp__" not in self.columns:
                    raise IoError(f"{path}:{number}: not a CmdStan CSV file of draws (its header has no lp__)")
            else:
                rows.append(self._row(line, number))
        if self.columns is None:
            raise IoError(f"{path}: not a CmdStan CSV file of draws (no header line)")
        self.values = np.array(rows, dtype=float).reshape(len(rows), len(self.columns))

    def _row(self, line, number):
        fields = line.split(",")
        if len(fields) != len(self.columns):
            raise IoError(f"{self.path}:{number}: {len(fields)} fields where the header has {len(self.columns)}")
        try:
            return [float(f) for f in fields]
        except ValueError:
            raise IoError(f"{self.path}:{number}: a field that is not a number") from None


class CsvFit:
    """The chains of one run read back from its CSV files, with the attributes the
    InferenceData writer reads: draws {name: (chain, draw, *shape)}, sample_stats
    {name: (chain, draw)}, log_lik (chain, draw, row) or None, observed (None), method, seed."""

    def __init__(self, paths):
        chains = [Chain(p) for p in paths]
        if not chains:
            raise IoError("no CSV files given")
        first = chains[0]
        for c in chains[1:]:
            if c.columns != first.columns:
                raise IoError(f"{c.path}: its columns differ from {first.path}'s: not chains of one run")
            if c.values.shape[0] != first.values.shape[0]:
                raise IoError(f"{c.path}: {c.values.shape[0]} draws where {first.path} has {first.values.shape[0]}")
        values = np.stack([c.values for c in chains])  # (chain, draw, column)
        col = {name: k for k, name in enumerate(first.columns)}
        # CmdStan's spelling: NUTS is `algorithm = hmc` with `engine = nuts`; vbn's own
        # kernels write their name as the algorithm.
        algorithm = first.settings.get("algorithm", "")
        self.method = first.settings.get("engine", algorithm) if algorithm == "hmc" else algorithm
        self.seed = first.settings.get("seed", "")
        self.observed = None
        self.sample_stats = sample_stats(self.method, lambda c: values[:, :, col[c]] if c in col else None)
        ll = [k for k, name in enumerate(first.columns) if name.startswith("log_lik.")]
        self.log_lik = values[:, :, ll] if ll else None
        params = [k for k, name in enumerate(first.columns) if not name.endswith("__") and k not in ll]
        self.names = [_element_name(first.columns[k]) for k in params]
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
