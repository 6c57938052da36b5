#include "inference/independence_mh.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace vbn::inference {

std::string proposal_label(const GaussianProposal& q) {
    return q.is_student_t() ? fmt::format("t{:g}", q.df()) : std::string("gaussian");
}

IndependenceMH::IndependenceMH(GaussianProposal proposal) : q_(std::move(proposal)), cache_(q_.dim()) {
    stats_.name = name();
}

std::string IndependenceMH::name() const { return "independence mh (" + proposal_label(q_) + ")"; }

void IndependenceMH::step(State& state, Density& target, Rng& rng, TransitionInfo& info) {
    independence_step(q_, cache_, stats_, "independence mh", state, target, rng, info);
}

std::unique_ptr<Kernel> IndependenceMH::clone() const { return std::make_unique<IndependenceMH>(*this); }

void IndependenceMH::collect_stats(std::vector<KernelStats>& out) const { out.push_back(stats_); }

}  // namespace vbn::inference
