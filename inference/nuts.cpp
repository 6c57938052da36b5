#include "inference/nuts.hpp"

#include "inference/math.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace vbn::inference {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Generalised no-U-turn criterion (Betancourt 2017, App. A.4): the trajectory still moves
// away from itself at both ends.
bool no_u_turn(const Eigen::VectorXd& p_sharp_minus, const Eigen::VectorXd& p_sharp_plus, const Eigen::VectorXd& rho) {
    return p_sharp_plus.dot(rho) > 0 && p_sharp_minus.dot(rho) > 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// EuclideanMetric

EuclideanMetric::EuclideanMetric(int dim, MetricKind kind) : kind_(kind), dim_(dim) {
    if (dim < 1) throw std::invalid_argument(fmt::format("nuts: the metric needs at least one coordinate, got {}", dim));
    if (kind == MetricKind::diagonal) {
        inv_diag_ = Eigen::VectorXd::Ones(dim);
        momentum_scale_ = Eigen::VectorXd::Ones(dim);
        // An LLT that never computed holds an indeterminate status, which copying the metric
        // would read; the empty factorisation is defined.
        llt_.compute(Eigen::MatrixXd(0, 0));
    } else {
        inv_ = Eigen::MatrixXd::Identity(dim, dim);
        llt_.compute(inv_);
    }
}

EuclideanMetric EuclideanMetric::diagonal(const Eigen::VectorXd& inverse_diagonal) {
    EuclideanMetric m(static_cast<int>(inverse_diagonal.size()), MetricKind::diagonal);
    m.set_inverse_diagonal(inverse_diagonal);
    return m;
}

EuclideanMetric EuclideanMetric::dense(const Eigen::MatrixXd& inverse) {
    EuclideanMetric m(static_cast<int>(inverse.rows()), MetricKind::dense);
    m.set_inverse(inverse);
    return m;
}

void EuclideanMetric::set_inverse_diagonal(const Eigen::VectorXd& inverse_diagonal) {
    if (kind_ != MetricKind::diagonal) throw std::invalid_argument("nuts: a dense metric needs a full inverse metric, not a diagonal");
    if (inverse_diagonal.size() != dim_) {
        throw std::invalid_argument(
            fmt::format("nuts: the inverse metric has {} entries but the metric has {}", inverse_diagonal.size(), dim_));
    }
    for (Eigen::Index i = 0; i < inverse_diagonal.size(); ++i) {
        const double v = inverse_diagonal(i);
        if (!(v > 0) || !std::isfinite(v)) {
            throw std::invalid_argument(
                fmt::format("nuts: inverse metric entry {} is {}; variances must be positive and finite", i + 1, v));
        }
    }
    inv_diag_ = inverse_diagonal;
    momentum_scale_ = inv_diag_.cwiseSqrt().cwiseInverse();
}

void EuclideanMetric::set_inverse(const Eigen::MatrixXd& inverse) {
    if (kind_ != MetricKind::dense) throw std::invalid_argument("nuts: a diagonal metric needs the diagonal of the inverse metric");
    if (inverse.rows() != dim_ || inverse.cols() != dim_) {
        throw std::invalid_argument(
            fmt::format("nuts: the inverse metric is {}x{} but the metric has dimension {}", inverse.rows(), inverse.cols(), dim_));
    }
    if (!inverse.allFinite()) throw std::invalid_argument("nuts: the inverse metric has a non-finite entry");
    const double scale = inverse.cwiseAbs().maxCoeff();
    for (Eigen::Index j = 0; j < inverse.cols(); ++j) {
        for (Eigen::Index i = j + 1; i < inverse.rows(); ++i) {
            if (std::abs(inverse(i, j) - inverse(j, i)) > 1e-10 * scale) {
                throw std::invalid_argument(fmt::format(
                    "nuts: the inverse metric is not symmetric: entry ({}, {}) is {} but ({}, {}) is {}", i + 1, j + 1,
                    inverse(i, j), j + 1, i + 1, inverse(j, i)));
            }
        }
    }
    // The Cholesky factorisation reads the lower triangle only, so the stored matrix is made
    // exactly symmetric from it.
    for (Eigen::Index j = 0; j < dim_; ++j) {
        for (Eigen::Index i = j; i < dim_; ++i) {
            inv_(i, j) = inverse(i, j);
            inv_(j, i) = inverse(i, j);
        }
    }
    llt_.compute(inv_);
    if (llt_.info() != Eigen::Success) throw std::invalid_argument("nuts: the inverse metric is not positive definite");
}

void EuclideanMetric::sharp(const Eigen::VectorXd& p, Eigen::VectorXd& out) const {
    if (kind_ == MetricKind::diagonal) {
        out.array() = inv_diag_.array() * p.array();
    } else {
        out.noalias() = inv_ * p;
    }
}

void EuclideanMetric::sample_momentum(Rng& rng, Eigen::VectorXd& p) const {
    for (Eigen::Index i = 0; i < p.size(); ++i) p(i) = rng.normal();
    if (kind_ == MetricKind::diagonal) {
        p.array() *= momentum_scale_.array();
    } else {
        llt_.matrixU().solveInPlace(p);
    }
}

Eigen::VectorXd EuclideanMetric::inverse_diagonal() const {
    return kind_ == MetricKind::diagonal ? inv_diag_ : Eigen::VectorXd(inv_.diagonal());
}

Eigen::MatrixXd EuclideanMetric::inverse() const {
    if (kind_ == MetricKind::dense) return inv_;
    return inv_diag_.asDiagonal();
}

// ---------------------------------------------------------------------------------------------
// NutsKernel: construction and workspace

void NutsKernel::PhasePoint::resize(int d) {
    x.setZero(d);
    p.setZero(d);
    grad.setZero(d);
}

void NutsKernel::TreeLevel::resize(int d) {
    propose_final.resize(d);
    for (Eigen::VectorXd* v : {&p_init_end, &p_sharp_init_end, &p_final_beg, &p_sharp_final_beg, &rho_init, &rho_final, &rho_subtree}) {
        v->setZero(d);
    }
}

NutsKernel::NutsKernel(int dim, MetricKind kind, NutsOptions options) : NutsKernel(EuclideanMetric(dim, kind), options) {}

NutsKernel::NutsKernel(EuclideanMetric metric, NutsOptions options)
    : metric_(std::move(metric)),
      options_(options),
      dual_averaging_(options.dual_averaging),
      metric_adaptation_(metric_.dim(), metric_.kind()),
      stepsize_(options.stepsize) {
    if (options_.max_depth < 1 || options_.max_depth > 30) {
        throw std::invalid_argument(fmt::format("nuts: max_depth must be in 1..30, got {}", options_.max_depth));
    }
    if (!(options_.max_energy_error > 0)) {
        throw std::invalid_argument(fmt::format("nuts: max_energy_error must be positive, got {}", options_.max_energy_error));
    }
    if (!(options_.stepsize > 0) || !std::isfinite(options_.stepsize)) {
        throw std::invalid_argument(fmt::format("nuts: the step size must be positive and finite, got {}", options_.stepsize));
    }
    // Checks the window options now rather than at the first warmup.
    AdaptationWindows{}.plan(0, options_.windows);
    if (!(options_.initial_metric_weight >= 0) || !std::isfinite(options_.initial_metric_weight)) {
        throw std::invalid_argument(
            fmt::format("nuts: initial_metric_weight must be >= 0 and finite, got {}", options_.initial_metric_weight));
    }
    if (options_.initial_metric_weight > 0) {
        if (metric_.kind() == MetricKind::diagonal) {
            metric_adaptation_.shrink_towards_variances(metric_.inverse_diagonal(), options_.initial_metric_weight);
        } else {
            metric_adaptation_.shrink_towards_covariance(metric_.inverse(), options_.initial_metric_weight);
        }
    }
    allocate();
}

void NutsKernel::allocate() {
    const int d = metric_.dim();
    for (PhasePoint* z : {&z_, &z_fwd_, &z_bck_, &z_sample_, &z_propose_, &z_trial_}) z->resize(d);
    for (Eigen::VectorXd* v : {&p_fwd_fwd_, &p_sharp_fwd_fwd_, &p_fwd_bck_, &p_sharp_fwd_bck_, &p_bck_fwd_, &p_sharp_bck_fwd_,
                               &p_bck_bck_, &p_sharp_bck_bck_, &rho_, &rho_fwd_, &rho_bck_, &rho_extended_, &sharp_}) {
        v->setZero(d);
    }
    // build_tree(depth) keeps its scratch in levels_[depth] for depth 1..max_depth − 1.
    levels_.resize(static_cast<std::size_t>(options_.max_depth));
    for (TreeLevel& level : levels_) level.resize(d);
}

std::unique_ptr<Kernel> NutsKernel::clone() const { return std::make_unique<NutsKernel>(*this); }

void NutsKernel::collect_stats(std::vector<KernelStats>& out) const {
    KernelStats s;
    s.name = name();
    s.proposed = transitions_;
    s.accepted = std::llround(accept_stat_sum_);
    out.push_back(s);
}

// ---------------------------------------------------------------------------------------------
// Warmup

void NutsKernel::begin_warmup(int iterations) {
    if (iterations < 0) throw std::invalid_argument(fmt::format("nuts: warmup iterations must be >= 0, got {}", iterations));
    warmup_ = true;
    warmup_iteration_ = 0;
    stepsize_found_ = false;
    metric_adaptation_.begin(iterations, options_.windows);
}

void NutsKernel::end_warmup() {
    if (warmup_ && options_.adapt_stepsize && dual_averaging_.iterations() > 0) {
        stepsize_ = dual_averaging_.final_stepsize();
    }
    warmup_ = false;
}

void NutsKernel::adapt(Density& target, Rng& rng, double accept_stat) {
    if (options_.adapt_stepsize) stepsize_ = dual_averaging_.learn(accept_stat);
    if (options_.adapt_metric && metric_adaptation_.observe(warmup_iteration_, z_.x)) {
        if (metric_.kind() == MetricKind::diagonal) {
            metric_.set_inverse_diagonal(metric_adaptation_.variance());
        } else {
            metric_.set_inverse(metric_adaptation_.covariance());
        }
        // A new metric changes the scale the step size lives on: search again from the
        // current point and restart dual averaging around the result (unless the metric only
        // adjusts a good initial one, and this is not the last window).
        if (options_.adapt_stepsize && (options_.restart_stepsize_each_window ||
                                        metric_adaptation_.windows().last_window_end(warmup_iteration_))) {
            find_initial_stepsize(target, rng);
            dual_averaging_.restart(std::log(10 * stepsize_));
        }
    }
    ++warmup_iteration_;
}

// Stan's heuristic: from the current point (in z_), take one leapfrog step of size ε with a
// fresh momentum; the first try fixes the direction, then ε doubles (or halves) until the
// step's acceptance probability exp(H₀ − H) crosses 0.8.
void NutsKernel::find_initial_stepsize(Density& target, Rng& rng) {
    const double log_target = std::log(0.8);
    const auto trial = [&] {
        z_trial_.x = z_.x;
        z_trial_.grad = z_.grad;
        z_trial_.lp = z_.lp;
        metric_.sample_momentum(rng, z_trial_.p);
        const double h0 = hamiltonian(z_trial_);
        if (!leapfrog(z_trial_, stepsize_, target)) return -kInf;
        const double dh = h0 - hamiltonian(z_trial_);
        return std::isnan(dh) ? -kInf : dh;
    };
    const int direction = trial() > log_target ? 1 : -1;
    for (;;) {
        const double dh = trial();
        if (direction == 1 && !(dh > log_target)) break;
        if (direction == -1 && !(dh < log_target)) break;
        stepsize_ = direction == 1 ? 2 * stepsize_ : 0.5 * stepsize_;
        if (stepsize_ > 1e7) {
            throw std::runtime_error(
                "nuts: the step size search grew past 1e7 without losing accuracy; the target looks "
                "improper (its log density does not decrease in some direction)");
        }
        if (stepsize_ == 0) {
            throw std::runtime_error(
                "nuts: no step size is small enough for an accurate leapfrog step from the current point; "
                "the log density or its gradient may be discontinuous there");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Transition

void NutsKernel::load_current(const State& state, Density& target) {
    const int d = metric_.dim();
    if (target.dim() != d || state.x.size() != d) {
        throw std::invalid_argument(fmt::format("nuts: the metric has dimension {}, the target {} and the state {}", d,
                                                target.dim(), state.x.size()));
    }
    // The gradient is not part of the chain state. It is reused from our last transition
    // only when nothing can have changed since: the same target object, and the state's x
    // and lp bit for bit where that transition left them (a kernel that moved x, or changed
    // the target and so, by the State contract, lp, forces a fresh evaluation). This saves
    // one gradient per transition, 1 / n_leapfrog of the cost.
    if (current_target_ == &target && state.lp == z_.lp && state.x == z_.x) return;
    current_target_ = nullptr;
    z_.x = state.x;
    z_.lp = target.log_density_gradient(z_.x, z_.grad);
    if (!std::isfinite(z_.lp) || !z_.grad.allFinite()) {
        throw std::domain_error(fmt::format("nuts: the log density at the current state is {}{}", z_.lp,
                                            z_.grad.allFinite() ? "" : " and its gradient is not finite"));
    }
}

double NutsKernel::hamiltonian(const PhasePoint& z) {
    metric_.sharp(z.p, sharp_);
    return -z.lp + 0.5 * z.p.dot(sharp_);
}

// One leapfrog step; false if it reached a point where the position, the log density or its
// gradient is not finite (the caller counts that as a divergence).
bool NutsKernel::leapfrog(PhasePoint& z, double epsilon, Density& target) {
    z.p += (0.5 * epsilon) * z.grad;
    metric_.sharp(z.p, sharp_);
    z.x += epsilon * sharp_;
    if (!z.x.allFinite()) return false;
    z.lp = target.log_density_gradient(z.x, z.grad);
    if (!std::isfinite(z.lp) || !z.grad.allFinite()) return false;
    z.p += (0.5 * epsilon) * z.grad;
    return true;
}

void NutsKernel::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    load_current(state, target);
    // The transition overwrites z_, so the cached gradient is valid again only once it ends.
    current_target_ = nullptr;
    if (warmup_ && options_.adapt_stepsize && !stepsize_found_) {
        find_initial_stepsize(target, rng);
        dual_averaging_.restart(std::log(10 * stepsize_));
        stepsize_found_ = true;
    }
    transition(target, rng, info);
    z_ = z_sample_;
    state.x = z_.x;
    state.lp = z_.lp;
    current_target_ = &target;

    ++transitions_;
    accept_stat_sum_ += info.accept_stat;
    if (info.divergent) ++divergences_;
    if (warmup_) adapt(target, rng, info.accept_stat);
}

void NutsKernel::transition(Density& target, Rng& rng, TransitionInfo& info) {
    const double epsilon = stepsize_;
    metric_.sample_momentum(rng, z_.p);
    metric_.sharp(z_.p, p_sharp_fwd_fwd_);
    h0_ = -z_.lp + 0.5 * z_.p.dot(p_sharp_fwd_fwd_);

    z_fwd_ = z_;
    z_bck_ = z_;
    z_sample_ = z_;
    for (Eigen::VectorXd* v : {&p_fwd_fwd_, &p_fwd_bck_, &p_bck_fwd_, &p_bck_bck_, &rho_}) *v = z_.p;
    for (Eigen::VectorXd* v : {&p_sharp_fwd_bck_, &p_sharp_bck_fwd_, &p_sharp_bck_bck_}) *v = p_sharp_fwd_fwd_;

    double log_sum_weight = 0;  // the initial point's weight exp(H₀ − H₀)
    n_leapfrog_ = 0;
    sum_metro_prob_ = 0;
    divergent_ = false;
    int depth = 0;

    while (depth < options_.max_depth) {
        rho_fwd_.setZero();
        rho_bck_.setZero();
        double log_sum_weight_subtree = -kInf;
        bool valid;
        // The new subtree is the forward (resp. backward) part of the merged trajectory; the
        // old trajectory becomes the other part.
        if (rng.uniform() > 0.5) {
            z_ = z_fwd_;
            rho_bck_ = rho_;
            p_bck_fwd_ = p_fwd_fwd_;
            p_sharp_bck_fwd_ = p_sharp_fwd_fwd_;
            valid = build_tree(depth, epsilon, target, rng, z_propose_, p_sharp_fwd_bck_, p_sharp_fwd_fwd_, p_fwd_bck_,
                               p_fwd_fwd_, rho_fwd_, log_sum_weight_subtree);
            z_fwd_ = z_;
        } else {
            z_ = z_bck_;
            rho_fwd_ = rho_;
            p_fwd_bck_ = p_bck_bck_;
            p_sharp_fwd_bck_ = p_sharp_bck_bck_;
            valid = build_tree(depth, -epsilon, target, rng, z_propose_, p_sharp_bck_fwd_, p_sharp_bck_bck_, p_bck_fwd_,
                               p_bck_bck_, rho_bck_, log_sum_weight_subtree);
            z_bck_ = z_;
        }
        if (!valid) break;
        ++depth;

        // Biased progressive sampling (Betancourt 2017, App. A.3): move to the new subtree's
        // proposal with probability min(1, w_new / w_old).
        if (log_sum_weight_subtree > log_sum_weight || rng.uniform() < std::exp(log_sum_weight_subtree - log_sum_weight)) {
            z_sample_ = z_propose_;
        }
        log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);

        rho_.noalias() = rho_bck_ + rho_fwd_;
        bool persist = no_u_turn(p_sharp_bck_bck_, p_sharp_fwd_fwd_, rho_);
        rho_extended_.noalias() = rho_bck_ + p_fwd_bck_;
        persist = persist && no_u_turn(p_sharp_bck_bck_, p_sharp_fwd_bck_, rho_extended_);
        rho_extended_.noalias() = rho_fwd_ + p_bck_fwd_;
        persist = persist && no_u_turn(p_sharp_bck_fwd_, p_sharp_fwd_fwd_, rho_extended_);
        if (!persist) break;
    }

    info.accept_stat = sum_metro_prob_ / static_cast<double>(n_leapfrog_);
    info.stepsize = epsilon;
    info.metric = &metric_;
    info.treedepth = depth;
    info.n_leapfrog = n_leapfrog_;
    info.divergent = divergent_;
    info.energy = hamiltonian(z_sample_);
    info.kernel = 0;
    info.regenerated = false;
}

// Builds a subtree of 2^depth leapfrog steps from z_ in the direction of epsilon's sign.
// On return z_ is the subtree's far end, `propose` a point drawn from it in proportion to
// exp(−H), p/p♯_beg and p/p♯_end its momenta at the near and far ends, and its momenta and
// weights are added to rho and log_sum_weight. False if the subtree diverged or turned back
// on itself, so it must be discarded.
bool NutsKernel::build_tree(int depth, double epsilon, Density& target, Rng& rng, PhasePoint& propose,
                            Eigen::VectorXd& p_sharp_beg, Eigen::VectorXd& p_sharp_end, Eigen::VectorXd& p_beg,
                            Eigen::VectorXd& p_end, Eigen::VectorXd& rho, double& log_sum_weight) {
    if (depth == 0) {
        ++n_leapfrog_;
        double h = kInf;
        if (leapfrog(z_, epsilon, target)) {
            metric_.sharp(z_.p, p_sharp_beg);
            h = -z_.lp + 0.5 * z_.p.dot(p_sharp_beg);
            if (std::isnan(h)) h = kInf;
        }
        if (!(h - h0_ <= options_.max_energy_error)) divergent_ = true;
        log_sum_weight = log_sum_exp(log_sum_weight, h0_ - h);
        // The Metropolis acceptance probability of jumping straight to this point, averaged
        // over the trajectory for the step size adaptation (H&G 2014 §3.2.1).
        sum_metro_prob_ += h0_ - h > 0 ? 1.0 : std::exp(h0_ - h);
        if (divergent_) return false;
        propose = z_;
        p_sharp_end = p_sharp_beg;
        rho += z_.p;
        p_beg = z_.p;
        p_end = z_.p;
        return true;
    }

    TreeLevel& w = levels_[static_cast<std::size_t>(depth)];

    double log_sum_weight_init = -kInf;
    w.rho_init.setZero();
    if (!build_tree(depth - 1, epsilon, target, rng, propose, p_sharp_beg, w.p_sharp_init_end, p_beg, w.p_init_end, w.rho_init,
                    log_sum_weight_init)) {
        return false;
    }

    double log_sum_weight_final = -kInf;
    w.rho_final.setZero();
    if (!build_tree(depth - 1, epsilon, target, rng, w.propose_final, w.p_sharp_final_beg, p_sharp_end, w.p_final_beg, p_end,
                    w.rho_final, log_sum_weight_final)) {
        return false;
    }

    // Uniform progressive sampling within the subtree: the second half's proposal replaces
    // the first's with probability w_final / (w_init + w_final).
    const double log_sum_weight_subtree = log_sum_exp(log_sum_weight_init, log_sum_weight_final);
    log_sum_weight = log_sum_exp(log_sum_weight, log_sum_weight_subtree);
    if (log_sum_weight_final > log_sum_weight_subtree ||
        rng.uniform() < std::exp(log_sum_weight_final - log_sum_weight_subtree)) {
        propose = w.propose_final;
    }

    w.rho_subtree.noalias() = w.rho_init + w.rho_final;
    rho += w.rho_subtree;
    bool persist = no_u_turn(p_sharp_beg, p_sharp_end, w.rho_subtree);
    // Across the merge: each half extended by the nearest point of the other.
    w.rho_subtree.noalias() = w.rho_init + w.p_final_beg;
    persist = persist && no_u_turn(p_sharp_beg, w.p_sharp_final_beg, w.rho_subtree);
    w.rho_subtree.noalias() = w.rho_final + w.p_init_end;
    persist = persist && no_u_turn(w.p_sharp_init_end, p_sharp_end, w.rho_subtree);
    return persist;
}

}  // namespace vbn::inference
