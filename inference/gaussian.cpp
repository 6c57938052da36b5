#include "inference/gaussian.hpp"

#include <Eigen/Cholesky>
#include <fmt/format.h>

#include <math.h>  // lgamma_r

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>

namespace vbn::inference {

namespace {

void check_df(double df) {
    if (!(df > 0)) throw std::invalid_argument(fmt::format("proposal: degrees of freedom must be positive, got {}", df));
}

// log Γ(x) without touching the global `signgam` that std::lgamma sets, since proposals are
// built inside worker threads (block marginals are taken at a kernel's first step).
double log_gamma(double x) {
    int sign = 0;
    return ::lgamma_r(x, &sign);
}

// Marsaglia & Tsang (2000): Gamma(shape, 1) for shape >= 1.
double gamma_marsaglia_tsang(Rng& rng, double shape) {
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        const double z = rng.normal();
        const double t = 1.0 + c * z;
        if (t <= 0) continue;
        const double v = t * t * t;
        const double u = rng.uniform();
        if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v;
    }
}

}  // namespace

double sample_chi_square(Rng& rng, double df) {
    check_df(df);
    const double shape = 0.5 * df;
    if (shape >= 1) return 2.0 * gamma_marsaglia_tsang(rng, shape);
    // Gamma(a) = Gamma(a + 1) U^(1/a) for a < 1, done in log space so tiny draws do not
    // underflow to exactly 0 (which would make the t draw infinite).
    const double g = gamma_marsaglia_tsang(rng, shape + 1.0);
    const double log_draw = std::log(g) + std::log(rng.uniform()) / shape;
    return 2.0 * std::max(std::exp(log_draw), std::numeric_limits<double>::min());
}

GaussianProposal::GaussianProposal(Eigen::VectorXd mean, const Eigen::MatrixXd& covariance, double df)
    : mean_(std::move(mean)), df_(df) {
    const Eigen::Index d = mean_.size();
    if (covariance.rows() != d || covariance.cols() != d) {
        throw std::invalid_argument(fmt::format("proposal: the covariance is {}x{} but the mean has {} entries",
                                                covariance.rows(), covariance.cols(), d));
    }
    if (!covariance.allFinite()) throw std::invalid_argument("proposal: the covariance has a non-finite entry");
    const double tol = 1e-8 * std::max(1.0, covariance.cwiseAbs().maxCoeff());
    for (Eigen::Index j = 0; j < d; ++j) {
        for (Eigen::Index i = j + 1; i < d; ++i) {
            if (std::abs(covariance(i, j) - covariance(j, i)) > tol) {
                throw std::invalid_argument(fmt::format(
                    "proposal: the covariance is not symmetric at ({}, {}): {} vs {}", i, j, covariance(i, j), covariance(j, i)));
            }
        }
    }
    Eigen::LLT<Eigen::MatrixXd> llt(covariance);
    if (llt.info() != Eigen::Success) throw std::invalid_argument("proposal: the covariance is not positive definite");
    chol_ = llt.matrixL();
    finish();
}

GaussianProposal GaussianProposal::from_cholesky(Eigen::VectorXd mean, Eigen::MatrixXd lower, double df) {
    GaussianProposal q;
    const Eigen::Index d = mean.size();
    if (lower.rows() != d || lower.cols() != d) {
        throw std::invalid_argument(fmt::format("proposal: the Cholesky factor is {}x{} but the mean has {} entries",
                                                lower.rows(), lower.cols(), d));
    }
    q.mean_ = std::move(mean);
    q.chol_ = std::move(lower);
    q.chol_.triangularView<Eigen::StrictlyUpper>().setZero();
    q.df_ = df;
    for (Eigen::Index i = 0; i < d; ++i) {
        if (!(q.chol_(i, i) > 0)) {
            throw std::invalid_argument(fmt::format("proposal: Cholesky diagonal entry {} is {}, not positive", i, q.chol_(i, i)));
        }
    }
    q.finish();
    return q;
}

void GaussianProposal::finish() {
    check_df(df_);
    if (!mean_.allFinite()) throw std::invalid_argument("proposal: the mean has a non-finite entry");
    if (!chol_.allFinite()) throw std::invalid_argument("proposal: the scale has a non-finite entry");
    const double d = static_cast<double>(dim());
    const double log_det_half = chol_.diagonal().array().log().sum();  // log |L| = ½ log |Σ|
    if (is_student_t()) {
        // Multivariate t: Γ((ν+d)/2) / (Γ(ν/2) (νπ)^(d/2) |Σ|^(1/2)).
        log_norm_ = log_gamma(0.5 * (df_ + d)) - log_gamma(0.5 * df_) - 0.5 * d * std::log(df_ * std::numbers::pi) -
                    log_det_half;
    } else {
        log_norm_ = -0.5 * d * std::log(2.0 * std::numbers::pi) - log_det_half;
    }
    scratch_.resize(mean_.size());
}

Eigen::MatrixXd GaussianProposal::scale_matrix() const { return chol_ * chol_.transpose(); }

void GaussianProposal::inflate(double factor) {
    if (!(factor > 0) || !std::isfinite(factor)) {
        throw std::invalid_argument(fmt::format("proposal: inflation factor must be positive and finite, got {}", factor));
    }
    chol_ *= std::sqrt(factor);
    finish();
}

void GaussianProposal::assign(const Eigen::Ref<const Eigen::VectorXd>& mean, const Eigen::Ref<const Eigen::MatrixXd>& lower) {
    const Eigen::Index d = mean_.size();
    if (mean.size() != d || lower.rows() != d || lower.cols() != d) {
        throw std::invalid_argument(
            fmt::format("proposal: cannot assign a mean of {} entries and a {}x{} factor to a proposal of {} dimensions",
                        mean.size(), lower.rows(), lower.cols(), d));
    }
    if (!mean.allFinite()) throw std::invalid_argument("proposal: the mean has a non-finite entry");
    for (Eigen::Index j = 0; j < d; ++j) {
        if (!(lower(j, j) > 0)) {
            throw std::invalid_argument(fmt::format("proposal: Cholesky diagonal entry {} is {}, not positive", j, lower(j, j)));
        }
        for (Eigen::Index i = j; i < d; ++i) {
            if (!std::isfinite(lower(i, j))) throw std::invalid_argument("proposal: the scale has a non-finite entry");
        }
    }
    mean_ = mean;
    chol_.triangularView<Eigen::Lower>() = lower;
    chol_.triangularView<Eigen::StrictlyUpper>().setZero();
    finish();
}

GaussianProposal GaussianProposal::marginal(int offset, int size) const {
    if (offset < 0 || size < 0 || offset + size > dim()) {
        throw std::invalid_argument(
            fmt::format("proposal: marginal of coordinates {}..{} outside 0..{}", offset, offset + size - 1, dim() - 1));
    }
    // Σ_bb = L_b· L_b·' over the rows of the block: recompute its factor rather than slicing
    // L, whose diagonal block is the factor only for the leading block.
    const Eigen::MatrixXd rows = chol_.middleRows(offset, size);
    return GaussianProposal(mean_.segment(offset, size), rows * rows.transpose(), df_);
}

void GaussianProposal::sample(Rng& rng, Eigen::Ref<Eigen::VectorXd> out) {
    for (Eigen::Index i = 0; i < scratch_.size(); ++i) scratch_[i] = rng.normal();
    out.noalias() = chol_.triangularView<Eigen::Lower>() * scratch_;
    if (is_student_t()) out /= std::sqrt(sample_chi_square(rng, df_) / df_);
    out += mean_;
}

double GaussianProposal::log_density(const Eigen::Ref<const Eigen::VectorXd>& x) {
    scratch_ = x - mean_;
    chol_.triangularView<Eigen::Lower>().solveInPlace(scratch_);
    const double m = scratch_.squaredNorm();  // Mahalanobis distance (x-μ)' Σ⁻¹ (x-μ)
    if (is_student_t()) return log_norm_ - 0.5 * (df_ + static_cast<double>(dim())) * std::log1p(m / df_);
    return log_norm_ - 0.5 * m;
}

}  // namespace vbn::inference
