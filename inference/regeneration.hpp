// Adaptive independence Metropolis–Hastings through regeneration (variational-mcmc.txt §4.4,
// Fig. 9–10, eq. 13–17), and regenerative (tour-based) standard errors.
//
// The kernel is an independence sampler with a Gaussian or Student-t proposal q, w = p / q.
// For any c > 0 it satisfies the minorisation K(θ, ·) >= s(θ) ν(·) with
//     s(θ) = min{1, c / w(θ)},   ν(dθ*) ∝ q(dθ*) min{1, w(θ*) / c}            (eq. 16;
// Mykland, Tierney & Yu 1995, Theorem 3), so after an accepted move θ -> θ* the chain
// regenerates with probability r(θ, θ*) of eq. (17): the next state is then independent of the
// past. Gilks, Roberts & Sahu (1998) show that the proposal may be re-fitted to the whole history
// at such times — and at no others — without disturbing the invariant law, provided the chain
// restarts from the new ν. Adaptation therefore carries on after warmup.
//
// At a regeneration that adapts: q is re-fitted to the mean and covariance of the chain's states
// since its first regeneration — the last complete window of a doubling sequence of windows
// pooled with the current one, so at least the most recent half of that history — keeping q's
// family (a Student-t stays a t with the same df); c is re-chosen from the past under the new
// q (RegenerationConstant); and the accepted proposal is discarded in favour of a draw from the
// new ν by rejection (Fig. 10: "repeat θ* ~ q_{j+1} until u3 < min{1, w(θ*)/c}"). Not every
// regeneration adapts: only once the history holds min_history states and min_moves moves and
// has grown by refit_growth since the last attempt, so re-fits become geometrically rarer. A
// regeneration that does not adapt keeps the accepted proposal, which given the regeneration
// is already a draw from the current ν.
//
// What adaptation cannot do: a stuck chain never regenerates, so it never adapts. A Gaussian q
// narrower than p in some direction has unbounded weights and the chain can stick for very
// long at a point of large w (the sampler is then not geometrically ergodic: Mengersen &
// Tweedie 1996). Start from a t proposal or an inflated covariance (GaussianProposal::inflate)
// when the initial fit may be too narrow, as variational fits usually are.
//
// The runner sees regenerations as TransitionInfo::regenerated; a draw so flagged is the first
// of a new tour. regenerative_estimate() turns the tours into a mean and its standard error.
#pragma once

#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <span>
#include <vector>

namespace vbn::inference {

// How c is chosen at each adaptation (any c > 0 is correct; c sets only the costs).
enum class RegenerationConstant {
    recent_median,  // c_factor · the median weight, under the new q, of the last accepted states
    best_point,     // c_factor · w(θ̃), θ̃ the highest-density point found (Fig. 10)
};

struct RegenerationOptions {
    RegenerationConstant c_rule = RegenerationConstant::recent_median;
    double c_factor = 0.5;  // Fig. 10 takes half a weight
    int recent_states = 64;  // accepted states remembered for recent_median
    // States in the history before the first re-fit; 0 means 20 (d + 1).
    int min_history = 0;
    // Moves (accepted proposals) among the states a re-fit uses; 0 means 10 (d + 1). A chain
    // that rarely moves holds few distinct points, whose spread understates p's.
    int min_moves = 0;
    // A regeneration re-fits only once the history has grown by this fraction since the last
    // attempt (0: every regeneration past min_history).
    double refit_growth = 0.1;
    // The re-fitted covariance is shrunk towards the initial proposal's scale matrix with this
    // many pseudo-draws, which keeps it positive definite when the history has few distinct
    // states; negative means d + 2.
    double prior_weight = -1;
    // Multiplies the history's covariance in the re-fit (> 1 keeps w = p / q bounded where the
    // estimate is too narrow, eq. 12).
    double inflation = 1.0;
    // Jitter added to the diagonal, relative to its mean, before factorising.
    double regularisation = 1e-9;
    // Rejection-sampling tries for the restart from the new ν. When all fail — the new q puts
    // little mass where its weight reaches c, a sign of a poor fit — that regeneration does
    // not adapt (see regeneration.cpp for why this keeps the chain exact).
    int max_restart_tries = 100;
    // false: never re-fit (plain Mykland–Tierney–Yu regeneration, for tours only).
    bool adapt = true;
    // true: stop adapting at end_warmup (tours are still detected).
    bool freeze_after_warmup = false;
};

class RegenerationKernel : public Kernel {
public:
    // Throws std::invalid_argument naming the option when one is out of range.
    explicit RegenerationKernel(GaussianProposal initial, RegenerationOptions options = {});

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override;

    const GaussianProposal& proposal() const { return q_; }
    const RegenerationOptions& options() const { return options_; }
    double log_c() const { return log_c_; }

    // Counts over the kernel's whole life (warmup and sampling).
    long regenerations() const { return regenerations_; }
    long refits() const { return refits_; }                  // adaptations carried out
    long failed_restarts() const { return failed_restarts_; }  // rejection sampling hit its cap
    long restart_tries() const { return restart_tries_; }      // density evaluations spent on restarts
    long history_size() const { return n_; }                  // states observed for re-fits

    // Steps of this kernel (0-based, counted from end_warmup, or from the first step when there
    // was no warmup) whose draw starts a new tour: the chain's iterations when this is the
    // chain's only kernel; inside a mixture, read TransitionInfo::regenerated instead.
    // Recording one allocates only when the list outgrows its capacity;
    // reserve_regeneration_times avoids even that.
    const std::vector<long>& regeneration_times() const { return times_; }
    void reserve_regeneration_times(std::size_t n) { times_.reserve(n); }

private:
    void setup(int d);
    void note_point(const Eigen::VectorXd& x, double lp);
    void remember(const Eigen::VectorXd& x, double lp);
    double choose_log_c(GaussianProposal& q);
    void observe(const Eigen::VectorXd& x, bool moved);
    void regenerate(State& state, Density& target, Rng& rng);
    bool fit_candidate();
    bool adapting() const;

    GaussianProposal q_;          // q_j
    GaussianProposal candidate_;  // q_{j+1} while it is tried
    RegenerationOptions options_;
    int dim_ = -1;
    double prior_weight_ = 0;
    long min_history_ = 0;
    long min_moves_ = 0;
    Eigen::MatrixXd prior_scale_;  // the initial proposal's scale matrix, the shrinkage target

    double log_c_ = 0;
    bool regenerated_once_ = false;
    bool sampling_ = true;
    bool frozen_ = false;

    // The last accepted states and their log densities (a ring), for recent_median.
    Eigen::MatrixXd recent_x_;  // d × recent_states
    Eigen::VectorXd recent_lp_, recent_log_w_;
    int recent_count_ = 0, recent_next_ = 0;
    bool c_stale_ = true;  // before the first regeneration: c follows the states seen

    // θ̃: the highest log density evaluated so far.
    Eigen::VectorXd best_x_;
    double best_lp_ = 0;
    bool has_best_ = false;

    // The history in doubling windows, each a Welford running mean and sum of outer products
    // of deviations; a re-fit pools the last complete window with the current one.
    struct Moments {
        long n = 0;
        long moves = 0;
        Eigen::VectorXd mean;
        Eigen::MatrixXd m2;
    };
    Moments window_, previous_;
    long window_length_ = 0;
    long n_ = 0;  // states observed in all
    long next_attempt_ = 0;
    Eigen::VectorXd mean_, delta_, delta_new_;
    Eigen::MatrixXd cov_, lower_;
    Eigen::LLT<Eigen::MatrixXd> llt_;

    IndependenceCache cache_;  // log q_j of the current state, and the proposals' storage

    long iteration_ = 0;
    std::vector<long> times_;
    long regenerations_ = 0, refits_ = 0, failed_restarts_ = 0, restart_tries_ = 0;
    KernelStats stats_;
};

// log r(θ, θ*) of eq. (17) from log w(θ), log w(θ*) and log c:
//     log c − min(log w)  if both weights exceed c,   max(log w) − log c  if both are below,
//     0 otherwise — i.e. min{0, log c − min(log w), max(log w) − log c}.
// −inf (no regeneration) when an argument is NaN.
double log_regeneration_probability(double log_w_current, double log_w_proposed, double log_c);

// The regenerative estimate of a mean over complete tours (Mykland, Tierney & Yu 1995, §3;
// Ripley 1987 §6.3): with Y_j the sum and N_j the length of tour j = 1..T,
//     μ̂ = Σ Y_j / Σ N_j,     se² = Σ (Y_j − μ̂ N_j)² / (Σ N_j)²
// (= γ̂² / (T N̄²) with γ̂² = Σ (Y_j − μ̂ N_j)² / T). Tours are independent, so this needs no
// autocorrelation estimate; it is reliable once T is large and the mean tour length is
// estimated precisely (tour_length_cv, the coefficient of variation of N̄, small).
struct RegenerativeEstimate {
    double mean = 0;
    double se = 0;             // NaN with fewer than two tours
    long tours = 0;            // complete tours used
    long draws = 0;            // draws in them
    double tour_length_cv = 0;  // sqrt(Σ (N_j − N̄)²) / (T N̄); NaN with fewer than two tours
};

// Draws at indices tour_starts[k] .. tour_starts[k+1]−1 form tour k; draws before the first start
// (the chain had not yet regenerated) and from the last start on (an unfinished tour) are not
// used. tour_starts must be strictly increasing and within 0 .. draws.size()−1; otherwise
// std::invalid_argument names the offending entry. With thinning, a tour starting at iteration
// t starts at kept draw ceil(t / thin): sums over the kept draws of a tour are still independent.
// mean and se are NaN when there is no complete tour or a draw in a tour is not finite.
RegenerativeEstimate regenerative_estimate(const Eigen::Ref<const Eigen::VectorXd>& draws,
                                           std::span<const long> tour_starts);

// Pools the complete tours of several chains of the same target (each chain's tours are
// independent of the others').
RegenerativeEstimate regenerative_estimate(std::span<const Eigen::VectorXd> chains,
                                           std::span<const std::vector<long>> tour_starts);

// Indices of the transitions flagged TransitionInfo::regenerated (the tour starts of a chain's
// kept draws when nothing was thinned).
std::vector<long> tour_starts(std::span<const TransitionInfo> info);

}  // namespace vbn::inference
