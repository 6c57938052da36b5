// Independence Metropolis–Hastings with a fixed Gaussian or Student-t proposal q, typically the
// variational posterior (variational-mcmc.txt §4.1): propose x* ~ q and accept with
// min(1, w(x*) / w(x)), w = p / q the importance weight, all in log space.
//
// The chain converges geometrically iff w is bounded (Proposition 1, Mengersen & Tweedie 1996),
// which is why a t proposal or an inflated covariance (GaussianProposal::inflate) is offered:
// heavier proposal tails keep p / q bounded where a Gaussian fit is too narrow.
//
// log q of the current state is remembered (and recomputed only if another kernel moved the
// state in between), so a step costs one density evaluation and one proposal evaluation.
#pragma once

#include "inference/gaussian.hpp"
#include "inference/kernel.hpp"
#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace vbn::inference {

// The state an independence sampler keeps between steps: the proposal's scratch and log q of
// the current state (valid while no other kernel has moved it).
struct IndependenceCache {
    Eigen::VectorXd proposal;
    Eigen::VectorXd x;  // the state whose log q is log_q
    double log_q = 0;
    bool valid = false;
    explicit IndependenceCache(int dim = 0) : proposal(Eigen::VectorXd::Zero(dim)), x(Eigen::VectorXd::Zero(dim)) {}
};

// Makes cache.log_q that of state.x, recomputing it only if another kernel moved the state
// since; true if it did.
template <class Q>
bool refresh_log_q(Q& q, IndependenceCache& cache, const State& state) {
    if (cache.valid && state.x == cache.x) return false;
    cache.x = state.x;
    cache.log_q = q.log_density(state.x);
    cache.valid = true;
    return true;
}

// What an independence move compared: the log importance weights log w = log p − log q of
// the current state and of the proposal (left in cache.proposal), and the proposal's log p.
struct IndependenceMove {
    double log_w_current = 0;
    double log_w_proposed = 0;
    double lp_proposed = 0;
    bool accepted = false;
};

// The move of an independence MH transition, cache.log_q being that of the current state
// (refresh_log_q): propose x* ~ q, accept with min(1, w(x*) / w(x)), w = p / q (§4.1).
template <class Q>
IndependenceMove independence_move(Q& q, IndependenceCache& cache, KernelStats& stats, State& state, Density& target,
                                   Rng& rng, TransitionInfo& info) {
    IndependenceMove move;
    move.log_w_current = state.lp - cache.log_q;
    q.sample(rng, cache.proposal);
    move.lp_proposed = proposal_log_density(target.log_density(cache.proposal));
    const double log_q = q.log_density(cache.proposal);
    move.log_w_proposed = move.lp_proposed - log_q;
    const MetropolisDecision decision = metropolis(move.log_w_proposed - move.log_w_current, rng);
    ++stats.proposed;
    if (decision.accept) {
        ++stats.accepted;
        state.x = cache.proposal;
        state.lp = move.lp_proposed;
        cache.x = cache.proposal;
        cache.log_q = log_q;
    }
    move.accepted = decision.accept;
    info.accept_stat = decision.probability;
    info.kernel = 0;
    return move;
}

// One independence MH transition with any proposal Q offering dim(), sample(rng, out) and
// log_density(x).
template <class Q>
void independence_step(Q& q, IndependenceCache& cache, KernelStats& stats, const char* what, State& state,
                       Density& target, Rng& rng, TransitionInfo& info) {
    if (state.x.size() != q.dim() || target.dim() != q.dim())
        throw std::invalid_argument(
            fmt::format("{}: the proposal has {} dimensions but the target has {}", what, q.dim(), target.dim()));
    require_finite_current(state.lp, what);
    refresh_log_q(q, cache, state);
    independence_move(q, cache, stats, state, target, rng, info);
}

class IndependenceMH : public Kernel {
public:
    explicit IndependenceMH(GaussianProposal proposal);

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override;

    const GaussianProposal& proposal() const { return q_; }

private:
    GaussianProposal q_;
    IndependenceCache cache_;
    KernelStats stats_;
};

// A short label for a proposal family: "gaussian" or "t5".
std::string proposal_label(const GaussianProposal& q);

}  // namespace vbn::inference
