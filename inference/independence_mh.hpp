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

namespace vbn::inference {

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
    Eigen::VectorXd proposal_;
    Eigen::VectorXd cached_x_;  // the state whose log q is cached_log_q_
    double cached_log_q_ = 0;
    bool cached_ = false;
    KernelStats stats_;
};

// A short label for a proposal family: "gaussian" or "t5".
std::string proposal_label(const GaussianProposal& q);

}  // namespace vbn::inference
