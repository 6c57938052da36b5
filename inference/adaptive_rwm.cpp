#include "inference/adaptive_rwm.hpp"

#include "inference/gaussian.hpp"
#include "inference/metric_adaptation.hpp"
#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace vbn::inference {

namespace {

constexpr double optimal_scale_sq = 2.38 * 2.38;  // Roberts & Rosenthal (2001): Ξ = (2.38²/d) Σ

}  // namespace

AdaptiveRandomWalk::AdaptiveRandomWalk(const Eigen::MatrixXd& initial_covariance, AdaptiveRandomWalkOptions options)
    : initial_covariance_(initial_covariance), options_(options) {
    // Eigen leaves an LLT's status unset until compute(); clones are copied before the
    // first step, so give it a defined (empty) factorisation now (UBSan flags the copy).
    llt_.compute(Eigen::MatrixXd(0, 0));
    if (initial_covariance_.size() > 0) (void)GaussianProposal(Eigen::VectorXd::Zero(initial_covariance_.rows()), initial_covariance_);
    if (!(options_.regularisation >= 0) || !std::isfinite(options_.regularisation)) {
        throw std::invalid_argument(fmt::format("adaptive rwm: regularisation must be >= 0, got {}", options_.regularisation));
    }
    if (!(options_.fixed_weight >= 0 && options_.fixed_weight <= 1)) {
        throw std::invalid_argument(fmt::format("adaptive rwm: fixed weight must be in [0, 1], got {}", options_.fixed_weight));
    }
    if (!(options_.fixed_sd > 0) || !std::isfinite(options_.fixed_sd)) {
        throw std::invalid_argument(fmt::format("adaptive rwm: fixed sd must be positive, got {}", options_.fixed_sd));
    }
    if (options_.start < 0 || options_.refresh < 1) {
        throw std::invalid_argument(
            fmt::format("adaptive rwm: start must be >= 0 and refresh >= 1, got {} and {}", options_.start, options_.refresh));
    }
    stats_.name = name();
}

void AdaptiveRandomWalk::setup(int d) {
    if (initial_covariance_.size() > 0 && initial_covariance_.rows() != d) {
        throw std::invalid_argument(fmt::format("adaptive rwm: the initial covariance is {}x{} but the target has {} parameters",
                                                initial_covariance_.rows(), initial_covariance_.cols(), d));
    }
    dim_ = d;
    if (options_.start == 0) options_.start = 2 * d;
    mean_.setZero(d);
    delta_.setZero(d);
    delta_new_.setZero(d);
    m2_.setZero(d, d);
    // Sizes the factorisation's storage now, so refactoring during warmup allocates nothing.
    cov_.setIdentity(d, d);
    llt_.compute(cov_);
    chol_.setZero(d, d);
    z_.setZero(d);
    proposal_.setZero(d);
    if (initial_covariance_.size() > 0 && d > 0) {
        cov_ = (optimal_scale_sq / d) * initial_covariance_;
        llt_.compute(cov_);
        chol_ = llt_.matrixL();
        has_chol_ = true;
    }
}

void AdaptiveRandomWalk::begin_warmup(int iterations) {
    (void)iterations;
    adapting_ = true;
    n_ = 0;  // observe() restarts the running moments at the next state
}

void AdaptiveRandomWalk::end_warmup() {
    adapting_ = false;
    if (dim_ > 0 && n_ > options_.start) refactor();
}

void AdaptiveRandomWalk::observe(const Eigen::VectorXd& x) {
    welford_outer_add(++n_, x, mean_, m2_, delta_, delta_new_);
}

void AdaptiveRandomWalk::refactor() {
    cov_ = m2_ * (optimal_scale_sq / (static_cast<double>(dim_) * static_cast<double>(n_ - 1)));
    cov_.diagonal().array() += options_.regularisation;
    llt_.compute(cov_);
    // A failed factorisation (a chain that has not moved and ε = 0) keeps the previous proposal.
    if (llt_.info() != Eigen::Success) return;
    chol_ = llt_.matrixL();
    has_chol_ = true;
}

void AdaptiveRandomWalk::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    if (dim_ < 0) setup(target.dim());
    if (state.x.size() != dim_) {
        throw std::invalid_argument(fmt::format("adaptive rwm: the state has {} entries but the target has {}", state.x.size(), dim_));
    }
    require_finite_current(state.lp, "adaptive rwm");
    info.kernel = 0;
    info.accept_stat = 1;
    if (dim_ == 0) return;

    const bool fixed = !has_chol_ || (options_.fixed_weight > 0 && rng.uniform() < options_.fixed_weight);
    for (Eigen::Index i = 0; i < z_.size(); ++i) z_[i] = rng.normal();
    if (fixed) {
        proposal_ = state.x + (options_.fixed_sd / std::sqrt(static_cast<double>(dim_))) * z_;
    } else {
        proposal_ = state.x;
        proposal_.noalias() += chol_.triangularView<Eigen::Lower>() * z_;
    }
    const double proposed = proposal_log_density(target.log_density(proposal_));
    const MetropolisDecision decision = metropolis(proposed - state.lp, rng);
    ++stats_.proposed;
    if (decision.accept) {
        ++stats_.accepted;
        state.x = proposal_;
        state.lp = proposed;
    }
    info.accept_stat = decision.probability;

    if (adapting_) {
        observe(state.x);
        if (n_ > options_.start && (n_ - options_.start - 1) % options_.refresh == 0) refactor();
    }
}

std::unique_ptr<Kernel> AdaptiveRandomWalk::clone() const { return std::make_unique<AdaptiveRandomWalk>(*this); }

void AdaptiveRandomWalk::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

}  // namespace vbn::inference
