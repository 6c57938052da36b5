#include "runtime/sampling/tail_probe.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vbn {

namespace {

// log p of block b at each column of `points` into lp: block_batch(b) columns a pass where the
// block batches (at 10^6 rows a value is a pass over every row: 16 cost about as much as one).
void block_values(const Target& target, int b, const Eigen::MatrixXd& points, Eigen::VectorXd& theta, Target::Workspace& ws,
                  Eigen::VectorXd& lp) {
    const int n = static_cast<int>(points.cols()), batch = target.block_batch(b);
    lp.resize(n);
    for (int start = 0; start < n; start += batch) {
        const int len = std::min(batch, n - start);
        if (batch > 1) {
            target.block_log_densities(b, points.middleCols(start, len), lp.segment(start, len), ws);
            continue;
        }
        theta.segment(target.block_offset(b), target.block_size(b)) = points.col(start);
        lp[start] = target.block_log_density(b, theta, ws);
    }
}

}  // namespace

TailProbe probe_tails(const Target& target, int b, inference::GaussianProposal& q, Eigen::VectorXd& theta,
                      Target::Workspace& ws, inference::Rng& rng, int draws) {
    const int off = target.block_offset(b), size = target.block_size(b);
    const Eigen::VectorXd kept = theta.segment(off, size);
    // The draws, then the probe points: the axes of q's affine part (a skewing map, where q has
    // one, moves its draws but not these).
    const int probes = 2 * size * static_cast<int>(probe_radii.size());
    Eigen::MatrixXd points(size, draws + probes);
    for (int i = 0; i < draws; ++i) q.sample(rng, points.col(i));
    const Eigen::MatrixXd lower = q.cholesky();
    int col = draws;
    for (double r : probe_radii)
        for (int k = 0; k < size; ++k)
            for (double sign : {-1.0, 1.0}) points.col(col++) = q.mean() + sign * r * lower.col(k);
    Eigen::VectorXd lp;
    block_values(target, b, points, theta, ws, lp);
    theta.segment(off, size) = kept;
    // log w = log p − log q, −∞ where p is not finite.
    Eigen::VectorXd log_w(points.cols());
    for (int i = 0; i < points.cols(); ++i)
        log_w[i] = std::isfinite(lp[i]) ? lp[i] - q.log_density(points.col(i)) : -std::numeric_limits<double>::infinity();
    TailProbe out;
    const double top = log_w.head(draws).maxCoeff();
    out.mean_log_w = std::isfinite(top) ? top + std::log((log_w.head(draws).array() - top).exp().mean()) : top;
    out.probe_log_w = log_w.tail(probes).maxCoeff();
    return out;
}

}  // namespace vbn
