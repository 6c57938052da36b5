#include "runtime/sampling/block_modes.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace vbn {

namespace {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

// Block b's Laplace covariance at its mode: as posterior_mode's, the exact curvature where a
// Student-t prior made Newton use the scale mixture's and the exact one is positive definite.
Mat block_laplace_cov(const Target& target, int b, const Vec& x, const Eigen::LLT<Mat>& newton, Target::Workspace& ws) {
    const Mat identity = Mat::Identity(target.block_size(b), target.block_size(b));
    if (target.heavy_tailed_prior()) {
        const Eigen::LLT<Mat> exact(target.complete_block_negative_hessian(b, x, ws, true));
        if (exact.info() == Eigen::Success) return exact.solve(identity);
    }
    return newton.solve(identity);
}

// Newton on block b alone (x's other entries fixed: they do not enter its terms), with the
// Levenberg shift and the backtracking of posterior_mode. A complete block's log density is
// concave, so it needs none of posterior_mode's steps along upward curvature; and it stops
// where the predicted gain is below the tolerance or 256 ulp of log p (posterior_mode: 1 ulp,
// then 256 ulp where the line search fails). Returns the steps taken, or -1 where it stopped
// short of a mode.
int block_newton(const Target& target, int b, Vec& x, int max_iterations, Mat& cov, Target::Workspace& ws) {
    const int off = target.block_offset(b), size = target.block_size(b);
    Vec grad(size), step(size);
    double lp = target.block_log_density_gradient(b, x, grad, ws);
    if (!std::isfinite(lp) || !grad.allFinite()) return -1;
    Eigen::LLT<Mat> llt;
    const Mat identity = Mat::Identity(size, size);
    for (int it = 1; it <= max_iterations; ++it) {
        const Mat h = target.complete_block_negative_hessian(b, x, ws);
        llt.compute(h);
        double shift = 0;
        const double scale = std::max(1.0, h.diagonal().cwiseAbs().maxCoeff());
        while (llt.info() != Eigen::Success) {
            shift = shift == 0 ? 1e-8 * scale : 10 * shift;
            if (shift > 1e12 * scale) return -1;
            llt.compute(h + shift * identity);
        }
        step = llt.solve(grad);
        const double decrement = grad.dot(step);  // ≈ twice the gain of a full step
        // At the mode, or as near as log p resolves: a block's log density is a sum over
        // its rows, and where the predicted gain is below its rounding, steps are "accepted"
        // without changing it (a block of 1,000 rows stopped at a decrement of 1.2e-13 and
        // took steps to the iteration limit).
        const double resolution = 256 * std::numeric_limits<double>::epsilon() * (1 + std::abs(lp));
        if (shift == 0 && (decrement <= 1e-14 * std::max(1.0, static_cast<double>(size)) || decrement <= resolution)) {
            cov = block_laplace_cov(target, b, x, llt, ws);
            return cov.allFinite() ? it - 1 : -1;
        }
        const Vec from = x.segment(off, size);
        bool accepted = false;
        double t = 1;
        for (int half = 0; half < 60 && !accepted; ++half, t /= 2) {
            x.segment(off, size) = from + t * step;
            const double next = target.block_log_density(b, x, ws);
            accepted = std::isfinite(next) && next >= lp + 1e-4 * t * decrement;
        }
        if (!accepted) {
            x.segment(off, size) = from;
            if (shift == 0 && decrement <= resolution) {
                cov = block_laplace_cov(target, b, x, llt, ws);
                return cov.allFinite() ? it - 1 : -1;
            }
            return -1;
        }
        lp = target.block_log_density_gradient(b, x, grad, ws);
        if (!std::isfinite(lp) || !grad.allFinite()) return -1;
    }
    return -1;
}

}  // namespace

BlockModes posterior_mode_by_block(const Target& target, const Vec& start, int max_iterations) {
    for (int b = 0; b < target.blocks(); ++b)
        if (!target.complete_block(b)) throw std::invalid_argument("posterior_mode_by_block: a block is not complete");
    BlockModes out;
    out.mode = start;
    out.cov.resize(static_cast<std::size_t>(target.blocks()));
    Target::Workspace ws = target.make_workspace();
    for (int b = 0; b < target.blocks(); ++b) {
        const int steps = block_newton(target, b, out.mode, max_iterations, out.cov[static_cast<std::size_t>(b)], ws);
        if (steps < 0) return out;
        out.iterations = std::max(out.iterations, steps);
    }
    out.converged = true;
    return out;
}

}  // namespace vbn
