#include "inference/independence_mh.hpp"

#include "inference/metropolis.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace vbn::inference {

std::string proposal_label(const GaussianProposal& q) {
    return q.is_student_t() ? fmt::format("t{:g}", q.df()) : std::string("gaussian");
}

IndependenceMH::IndependenceMH(GaussianProposal proposal) : q_(std::move(proposal)) {
    proposal_.setZero(q_.dim());
    cached_x_.setZero(q_.dim());
    stats_.name = name();
}

std::string IndependenceMH::name() const { return "independence mh (" + proposal_label(q_) + ")"; }

void IndependenceMH::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    if (state.x.size() != q_.dim() || target.dim() != q_.dim()) {
        throw std::invalid_argument(fmt::format("independence mh: the proposal has {} dimensions but the target has {}",
                                                q_.dim(), target.dim()));
    }
    require_finite_current(state.lp, "independence mh");
    if (!cached_ || state.x != cached_x_) {
        cached_x_ = state.x;
        cached_log_q_ = q_.log_density(state.x);
        cached_ = true;
    }
    q_.sample(rng, proposal_);
    const double lp = proposal_log_density(target.log_density(proposal_));
    const double log_q = q_.log_density(proposal_);
    // §4.1: log w(x*) - log w(x), w = p / q.
    const MetropolisDecision decision = metropolis((lp - log_q) - (state.lp - cached_log_q_), rng);
    ++stats_.proposed;
    if (decision.accept) {
        ++stats_.accepted;
        state.x = proposal_;
        state.lp = lp;
        cached_x_ = proposal_;
        cached_log_q_ = log_q;
    }
    info.accept_stat = decision.probability;
    info.kernel = 0;
}

std::unique_ptr<Kernel> IndependenceMH::clone() const { return std::make_unique<IndependenceMH>(*this); }

void IndependenceMH::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

}  // namespace vbn::inference
