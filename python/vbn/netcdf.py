"""The command line's CSV files as one InferenceData netCDF file:

    python3 -m vbn.netcdf OUT.nc FILE_1.csv [FILE_2.csv ...]

writes the groups posterior, sample_stats and (when the files have log_lik columns, from
`vbn fit --log-lik`) log_likelihood in ArviZ's schema, as FitResult.to_netcdf does."""

import sys

from ._cmdstan import read_csv
from .errors import Error

USAGE = "usage: python3 -m vbn.netcdf OUT.nc FILE_1.csv [FILE_2.csv ...]"


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(args) < 2 or not args[0].endswith(".nc"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        fit = read_csv(*args[1:])
        fit.to_netcdf(args[0])
    except Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    groups = "posterior, sample_stats" + (", log_likelihood" if fit.log_lik is not None else "")
    print(f"{args[0]}: {fit.chains} chains of {fit.draws_per_chain} draws ({groups})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
