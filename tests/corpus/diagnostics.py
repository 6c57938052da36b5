"""Rank-normalised split R-hat and bulk/tail ESS (Vehtari et al. 2021), standard library only.

check.py needs them for functions of the draws (|w|, row sums of |W|) that vbn's own summary
does not report. chains: a list of equal-length lists of floats.
"""
import math
from statistics import NormalDist, fmean


def _split(chains):
    half = len(chains[0]) // 2
    return [c[:half] for c in chains] + [c[len(c) - half:] for c in chains]


def _rank_normal(chains):
    flat = sorted((v, i) for i, v in enumerate(x for c in chains for x in c))
    s = len(flat)
    z = [0.0] * s
    j = 0
    while j < s:                                  # average ranks over ties
        k = j
        while k + 1 < s and flat[k + 1][0] == flat[j][0]:
            k += 1
        r = (j + k) / 2 + 1
        for t in range(j, k + 1):
            z[flat[t][1]] = NormalDist().inv_cdf((r - 0.375) / (s + 0.25))
        j = k + 1
    n = len(chains[0])
    return [z[i * n:(i + 1) * n] for i in range(len(chains))]


def _rhat(chains):
    n = len(chains[0])
    means = [fmean(c) for c in chains]
    w = fmean([sum((x - m) ** 2 for x in c) / (n - 1) for c, m in zip(chains, means)])
    b = n * sum((m - fmean(means)) ** 2 for m in means) / (len(chains) - 1)
    return math.sqrt(((n - 1) / n * w + b / n) / w) if w > 0 else float("nan")


def _ess(chains):
    m, n = len(chains), len(chains[0])
    means = [fmean(c) for c in chains]
    var_c = [sum((x - mu) ** 2 for x in c) / n for c, mu in zip(chains, means)]
    w = fmean([v * n / (n - 1) for v in var_c])
    b_n = sum((mu - fmean(means)) ** 2 for mu in means) / (m - 1)
    var_plus = (n - 1) / n * w + b_n
    if var_plus <= 0:
        return float("nan")

    def rho(lag):
        acov = fmean([sum((c[i] - mu) * (c[i + lag] - mu) for i in range(n - lag)) / n
                      for c, mu in zip(chains, means)])
        return 1 - (w - acov) / var_plus

    tau, prev, t = -1.0, float("inf"), 0
    while t + 1 < n:                              # Geyer's initial monotone sequence
        pair = rho(t) + rho(t + 1)
        if pair < 0:
            break
        pair = min(pair, prev)
        tau += 2 * pair
        prev, t = pair, t + 2
    return m * n / max(tau, 1 / math.log10(m * n))


def mcse_sd(chains):
    """Monte Carlo standard error of the sd of the draws, by the delta method on the mean of the
    squared deviations, with that mean's ESS (as R's posterior::mcse_sd): large where a tail is
    heavy, so that a few far excursions decide the sd."""
    flat = [x for c in chains for x in c]
    mu = fmean(flat)
    sq = [[(x - mu) ** 2 for x in c] for c in chains]
    flat_sq = [x for c in sq for x in c]
    e_var = fmean(flat_sq)
    var_sq = sum((x - e_var) ** 2 for x in flat_sq) / (len(flat_sq) - 1)
    return math.sqrt(var_sq / (4 * e_var * _ess(_split(sq))))


def summarize(chains):
    """R-hat (max of bulk and folded), bulk-ESS and tail-ESS of one quantity."""
    sp = _split(chains)
    med = sorted(x for c in sp for x in c)[sum(len(c) for c in sp) // 2]
    folded = [[abs(x - med) for x in c] for c in sp]
    rhat = max(_rhat(_rank_normal(sp)), _rhat(_rank_normal(folded)))
    flat = sorted(x for c in sp for x in c)
    q05, q95 = flat[int(0.05 * len(flat))], flat[int(0.95 * len(flat))]
    tails = [min(_ess([[float(x <= q) for x in c] for c in sp]) for q in (q05, q95))]
    return rhat, _ess(_rank_normal(sp)), tails[0]
