#include "inference/regeneration.hpp"

#include "inference/independence_mh.hpp"
#include "inference/metric_adaptation.hpp"
#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

namespace vbn::inference {

namespace {

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

void require(bool ok, const char* option, double value, const char* expected) {
    if (!ok) throw std::invalid_argument(fmt::format("regeneration: {} must be {}, got {}", option, expected, value));
}

}  // namespace

double log_regeneration_probability(double log_w_current, double log_w_proposed, double log_c) {
    if (std::isnan(log_w_current) || std::isnan(log_w_proposed) || std::isnan(log_c)) {
        return -std::numeric_limits<double>::infinity();
    }
    const double lo = std::min(log_w_current, log_w_proposed);
    const double hi = std::max(log_w_current, log_w_proposed);
    // eq. (17): both weights above c give c / min w, both below give max w / c, and c between
    // them gives 1; each of the first two is >= 1 exactly when c lies between the weights, so
    // the three cases are one min.
    return std::min({0.0, log_c - lo, hi - log_c});
}

RegenerationKernel::RegenerationKernel(GaussianProposal initial, RegenerationOptions options)
    : q_(std::move(initial)), options_(options) {
    // Eigen leaves an LLT's status unset until compute(); clones are copied before the
    // first step, so give it a defined (empty) factorisation now (UBSan flags the copy).
    llt_.compute(Eigen::MatrixXd(0, 0));
    const RegenerationOptions& o = options_;
    require(o.c_factor > 0 && std::isfinite(o.c_factor), "c_factor", o.c_factor, "positive and finite");
    require(o.recent_states >= 1, "recent_states", o.recent_states, ">= 1");
    require(o.min_history >= 0, "min_history", o.min_history, ">= 0");
    require(o.min_moves >= 0, "min_moves", o.min_moves, ">= 0");
    require(o.refit_growth >= 0 && std::isfinite(o.refit_growth), "refit_growth", o.refit_growth, ">= 0 and finite");
    require(std::isfinite(o.prior_weight), "prior_weight", o.prior_weight, "finite");
    require(o.inflation > 0 && std::isfinite(o.inflation), "inflation", o.inflation, "positive and finite");
    require(o.regularisation >= 0 && std::isfinite(o.regularisation), "regularisation", o.regularisation,
            ">= 0 and finite");
    require(o.max_restart_tries >= 1, "max_restart_tries", o.max_restart_tries, ">= 1");
    stats_.name = name();
}

std::string RegenerationKernel::name() const { return "regeneration (" + proposal_label(q_) + ")"; }

void RegenerationKernel::setup(int d) {
    if (q_.dim() != d) {
        throw std::invalid_argument(
            fmt::format("regeneration: the proposal has {} dimensions but the target has {}", q_.dim(), d));
    }
    dim_ = d;
    min_history_ = options_.min_history > 0 ? options_.min_history : 20L * (d + 1);
    min_moves_ = options_.min_moves > 0 ? options_.min_moves : 10L * (d + 1);
    prior_weight_ = options_.prior_weight >= 0 ? options_.prior_weight : d + 2.0;
    next_attempt_ = min_history_;
    prior_scale_ = q_.scale_matrix();
    candidate_ = q_;
    window_length_ = min_history_;
    for (Moments* m : {&window_, &previous_}) {
        m->n = 0;
        m->moves = 0;
        m->mean.setZero(d);
        m->m2.setZero(d, d);
    }
    mean_.setZero(d);
    delta_.setZero(d);
    delta_new_.setZero(d);
    // Sizes the factorisation's storage now, so re-fits allocate nothing.
    cov_.setIdentity(d, d);
    llt_.compute(cov_);
    lower_.setZero(d, d);
    recent_x_.setZero(d, options_.recent_states);
    recent_lp_.setZero(options_.recent_states);
    recent_log_w_.setZero(options_.recent_states);
    best_x_.setZero(d);
    cache_ = IndependenceCache(d);
}

void RegenerationKernel::begin_warmup(int iterations) {
    (void)iterations;
    sampling_ = false;
    frozen_ = false;
    iteration_ = 0;
    times_.clear();
}

void RegenerationKernel::end_warmup() {
    // Adaptation goes on: it happens only at regenerations, which keeps the chain exact
    // (Gilks, Roberts & Sahu 1998), unlike adaptation at arbitrary times.
    sampling_ = true;
    frozen_ = options_.freeze_after_warmup;
    iteration_ = 0;
    times_.clear();
}

bool RegenerationKernel::adapting() const { return options_.adapt && !frozen_; }

void RegenerationKernel::note_point(const Eigen::VectorXd& x, double lp) {
    if (!std::isfinite(lp) || (has_best_ && lp <= best_lp_)) return;
    best_x_ = x;
    best_lp_ = lp;
    has_best_ = true;
    c_stale_ = true;
}

void RegenerationKernel::remember(const Eigen::VectorXd& x, double lp) {
    recent_x_.col(recent_next_) = x;
    recent_lp_[recent_next_] = lp;
    recent_next_ = (recent_next_ + 1) % options_.recent_states;
    recent_count_ = std::min(recent_count_ + 1, options_.recent_states);
    c_stale_ = true;
}

// c affects only efficiency. Integrating eq. (16), a step regenerates with probability
// E_p[min{1, c/w}] · E_q[min{1, w/c}] and a restart accepts with E_q[min{1, w/c}]: both are
// good when c is a typical weight of the chain. Half the weight at the mode (Fig. 10) is typical
// for a Gaussian q close to p, where w hardly varies; but for a Student-t q the weight p/q of a
// Gaussian-like p is smallest at the mode and peaks on the shell of Mahalanobis radius² ≈ d,
// where the chain spends its time, so that c sits far below the chain's weights and tours grow
// long (a correlated 10-D Gaussian and a t5 q fitted to it: one regeneration in 20 steps,
// against one in 2.4 with the rule below).
// The median weight of recent accepted states is typical by construction whatever the family.
double RegenerationKernel::choose_log_c(GaussianProposal& q) {
    const double log_factor = std::log(options_.c_factor);
    if (options_.c_rule == RegenerationConstant::recent_median && recent_count_ > 0) {
        for (int k = 0; k < recent_count_; ++k) recent_log_w_[k] = recent_lp_[k] - q.log_density(recent_x_.col(k));
        double* const first = recent_log_w_.data();
        std::nth_element(first, first + recent_count_ / 2, first + recent_count_);
        const double median = first[recent_count_ / 2];
        if (std::isfinite(median)) return log_factor + median;
    }
    return log_factor + best_lp_ - q.log_density(best_x_);
}

void RegenerationKernel::observe(const Eigen::VectorXd& x, bool moved) {
    ++n_;
    Moments& m = window_;
    ++m.n;
    if (moved) ++m.moves;
    welford_outer_add(m.n, x, m.mean, m.m2, delta_, delta_new_);
    // Doubling windows: a fit sees at least the most recent half of the history, so the
    // start — where a poor proposal held the chain still for long stretches — is forgotten
    // geometrically fast instead of like 1/n.
    if (m.n == window_length_) {
        previous_.mean.swap(window_.mean);  // swaps storage: no copy, no allocation
        previous_.m2.swap(window_.m2);
        previous_.n = window_.n;
        previous_.moves = window_.moves;
        window_.n = 0;
        window_.moves = 0;
        window_length_ *= 2;
    }
}

bool RegenerationKernel::fit_candidate() {
    const long count = previous_.n + window_.n;
    if (count < 2) return false;
    // Pools the two windows (Chan, Golub & LeVeque): M2 = M2_a + M2_b + δ δ' n_a n_b / n.
    const double na = static_cast<double>(previous_.n), nb = static_cast<double>(window_.n);
    const double n = na + nb;
    delta_ = window_.mean - previous_.mean;
    mean_ = previous_.mean + (nb / n) * delta_;
    if (previous_.n == 0) mean_ = window_.mean;
    if (window_.n == 0) mean_ = previous_.mean;
    const double k = prior_weight_;
    // (n · inflation · S + κ Σ₀) / (n + κ), S = M2 / (n - 1): the history's covariance, shrunk
    // towards the initial proposal's scale so that a history with few distinct states (a
    // proposal that is rarely accepted) still gives a positive definite, not degenerate, fit.
    const double a = options_.inflation * n / ((n - 1.0) * (n + k));
    cov_ = a * (previous_.m2 + window_.m2) + (k / (n + k)) * prior_scale_;
    if (previous_.n > 0 && window_.n > 0) cov_.noalias() += (a * na * nb / n) * (delta_ * delta_.transpose());
    const double jitter = options_.regularisation * cov_.diagonal().mean();
    cov_.diagonal().array() += jitter;
    llt_.compute(cov_);
    if (llt_.info() != Eigen::Success) return false;
    lower_ = llt_.matrixL();
    if (!lower_.allFinite() || !mean_.allFinite() || !(lower_.diagonal().array() > 0).all()) return false;
    candidate_.assign(mean_, lower_);
    return true;
}

// Called after an accepted move θ -> θ* that regenerated. Without adaptation θ* stays: given
// S = 1 it is distributed as ν_j (eq. 14–15), so the chain is the split chain of K_j.
//
// With adaptation (Fig. 10), θ* is discarded and the chain restarts from ν_{j+1} of the re-fitted
// q_{j+1} and c_{j+1}, drawn by rejection from q_{j+1} with acceptance min{1, w_{j+1}/c_{j+1}}.
// The expected number of tries is 1 / E_{q_{j+1}}[min{1, w_{j+1}/c_{j+1}}], about one when
// q_{j+1} is close to p and c is half a typical weight, but unbounded for a poor fit. So the tries
// are capped, and when they all fail the regeneration does not adapt: q_j, c_j and θ* are kept.
// That is still exact: the tries use fresh random numbers and q_{j+1}, which depend on the past
// only, so θ* given S = 1 and the failure is still a draw from ν_j, and "do not adapt this time"
// is a history-dependent choice of K_{j+1} = K_j, which Gilks, Roberts & Sahu allow.
void RegenerationKernel::regenerate(State& state, Density& target, Rng& rng) {
    ++regenerations_;
    if (sampling_) times_.push_back(iteration_);
    regenerated_once_ = true;
    if (!adapting() || n_ < next_attempt_ || previous_.moves + window_.moves < min_moves_) return;
    // Re-fits at geometrically spaced history sizes: each costs a factorisation and a restart.
    const double grown = std::ceil(static_cast<double>(n_) * (1.0 + options_.refit_growth));
    next_attempt_ = std::max(n_ + 1, static_cast<long>(std::min(grown, 1e18)));
    if (!fit_candidate()) return;
    // c_{j+1} from the past only, under q_{j+1}. Halving a typical weight puts c below most
    // weights when q_{j+1} is close to p: then s(θ) = c / w(θ) ≈ 1/2 and the restart's
    // acceptance min{1, w/c} ≈ 1, so tours are short and a restart costs about one evaluation.
    const double log_c = choose_log_c(candidate_);
    if (!std::isfinite(log_c)) return;
    for (int t = 0; t < options_.max_restart_tries; ++t) {
        ++restart_tries_;
        Eigen::VectorXd& x = cache_.proposal;
        candidate_.sample(rng, x);
        const double lp = proposal_log_density(target.log_density(x));
        const double log_q = candidate_.log_density(x);
        note_point(x, lp);
        if (std::log(rng.uniform()) < lp - log_q - log_c) {
            q_ = candidate_;
            log_c_ = log_c;
            state.x = x;
            state.lp = lp;
            cache_.x = x;
            cache_.log_q = log_q;
            remember(x, lp);
            ++refits_;
            return;
        }
    }
    ++failed_restarts_;
}

void RegenerationKernel::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    if (dim_ < 0) setup(target.dim());
    if (state.x.size() != dim_ || target.dim() != dim_) {
        throw std::invalid_argument(fmt::format("regeneration: the proposal has {} dimensions but the target has {}",
                                                dim_, state.x.size() != dim_ ? state.x.size() : target.dim()));
    }
    require_finite_current(state.lp, "regeneration");
    info.kernel = 0;
    info.accept_stat = 1;
    info.regenerated = false;
    if (dim_ == 0) {
        ++iteration_;
        return;
    }
    if (refresh_log_q(q_, cache_, state)) note_point(state.x, state.lp);
    // Before the first regeneration the chain has not reached the atom, and that first stretch
    // is no tour, so c may follow the states seen (it is fixed before each proposal, which is
    // all eq. 15 needs); from the first regeneration on c changes only at regenerations, as
    // the split chain of eq. (14) requires.
    if (!regenerated_once_ && c_stale_) {
        log_c_ = choose_log_c(q_);
        if (!std::isfinite(log_c_)) log_c_ = std::log(options_.c_factor) + state.lp - cache_.log_q;
        if (!std::isfinite(log_c_)) log_c_ = 0;
        c_stale_ = false;
    }

    // §4.1: accept with min{1, w(θ*) / w(θ)}.
    const IndependenceMove move = independence_move(q_, cache_, stats_, state, target, rng, info);
    note_point(cache_.proposal, move.lp_proposed);
    if (move.accepted) {
        remember(state.x, state.lp);
        // eq. (15)-(17): only an accepted move can regenerate (ν has no atom at θ).
        if (std::log(rng.uniform()) < log_regeneration_probability(move.log_w_current, move.log_w_proposed, log_c_)) {
            info.regenerated = true;
            regenerate(state, target, rng);
        }
    }
    if (regenerated_once_) observe(state.x, move.accepted);
    ++iteration_;
}

std::unique_ptr<Kernel> RegenerationKernel::clone() const { return std::make_unique<RegenerationKernel>(*this); }

void RegenerationKernel::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

namespace {

struct Tour {
    double sum = 0;  // of the draws minus the shift
    long length = 0;
};

// Appends the complete tours of one chain; false if a draw in them is not finite.
bool add_tours(const Eigen::Ref<const Eigen::VectorXd>& draws, std::span<const long> starts, double shift,
               std::vector<Tour>& tours, const std::string& where) {
    const long n = static_cast<long>(draws.size());
    for (std::size_t k = 0; k < starts.size(); ++k) {
        if (starts[k] < 0 || starts[k] >= n) {
            throw std::invalid_argument(fmt::format("regenerative estimate: {}tour start {} is {}, outside the draws 0..{}",
                                                    where, k, starts[k], n - 1));
        }
        if (k > 0 && starts[k] <= starts[k - 1]) {
            throw std::invalid_argument(fmt::format(
                "regenerative estimate: {}tour starts must increase, but start {} is {} after {}", where, k, starts[k],
                starts[k - 1]));
        }
    }
    bool finite = true;
    for (std::size_t k = 0; k + 1 < starts.size(); ++k) {
        Tour t;
        for (long i = starts[k]; i < starts[k + 1]; ++i) t.sum += draws[i] - shift;
        t.length = starts[k + 1] - starts[k];
        finite = finite && std::isfinite(t.sum);
        tours.push_back(t);
    }
    return finite;
}

// The first complete tour's mean: subtracting it keeps Y_j - μ̂ N_j free of cancellation when
// the mean is large compared with the spread.
double shift_of(const Eigen::Ref<const Eigen::VectorXd>& draws, std::span<const long> starts) {
    if (starts.size() < 2 || starts[0] < 0 || starts[1] <= starts[0] || starts[1] > draws.size()) return 0;
    const double s = draws.segment(starts[0], starts[1] - starts[0]).mean();
    return std::isfinite(s) ? s : 0;
}

RegenerativeEstimate combine(const std::vector<Tour>& tours, double shift, bool finite) {
    RegenerativeEstimate e;
    e.tours = static_cast<long>(tours.size());
    for (const Tour& t : tours) e.draws += t.length;
    if (e.tours == 0 || !finite) {
        e.mean = e.se = e.tour_length_cv = nan;
        return e;
    }
    double sum = 0;
    for (const Tour& t : tours) sum += t.sum;
    const double total = static_cast<double>(e.draws);
    const double mu = sum / total;
    e.mean = shift + mu;
    if (e.tours < 2) {
        e.se = e.tour_length_cv = nan;
        return e;
    }
    const double mean_length = total / static_cast<double>(e.tours);
    double resid = 0, spread = 0;
    for (const Tour& t : tours) {
        const double len = static_cast<double>(t.length);
        resid += (t.sum - mu * len) * (t.sum - mu * len);
        spread += (len - mean_length) * (len - mean_length);
    }
    e.se = std::sqrt(resid) / total;
    e.tour_length_cv = std::sqrt(spread) / total;
    return e;
}

}  // namespace

RegenerativeEstimate regenerative_estimate(const Eigen::Ref<const Eigen::VectorXd>& draws,
                                           std::span<const long> tour_starts) {
    std::vector<Tour> tours;
    tours.reserve(tour_starts.size());
    const double shift = shift_of(draws, tour_starts);
    const bool finite = add_tours(draws, tour_starts, shift, tours, "");
    return combine(tours, shift, finite);
}

RegenerativeEstimate regenerative_estimate(std::span<const Eigen::VectorXd> chains,
                                           std::span<const std::vector<long>> tour_starts) {
    if (chains.size() != tour_starts.size()) {
        throw std::invalid_argument(fmt::format("regenerative estimate: {} chains but {} lists of tour starts",
                                                chains.size(), tour_starts.size()));
    }
    std::vector<Tour> tours;
    double shift = 0;
    bool have_shift = false, finite = true;
    for (std::size_t c = 0; c < chains.size(); ++c) {
        if (!have_shift && tour_starts[c].size() >= 2) {
            shift = shift_of(chains[c], tour_starts[c]);
            have_shift = true;
        }
        finite = add_tours(chains[c], tour_starts[c], shift, tours, fmt::format("chain {}: ", c)) && finite;
    }
    return combine(tours, shift, finite);
}

std::vector<long> tour_starts(std::span<const TransitionInfo> info) {
    std::vector<long> starts;
    for (std::size_t i = 0; i < info.size(); ++i) {
        if (info[i].regenerated) starts.push_back(static_cast<long>(i));
    }
    return starts;
}

}  // namespace vbn::inference
