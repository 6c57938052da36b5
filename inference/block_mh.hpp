// Block independence Metropolis–Hastings (variational-mcmc.txt §4.2, Fig. 6): one step sweeps the
// density's blocks in order; block j is proposed from its own fixed proposal q_j and accepted
// against the exact conditional p(θ_j | θ_-j) with ratio
//     [p(θ*_j, θ_-j) q_j(θ_j)] / [p(θ_j, θ_-j) q_j(θ*_j)],
// where the p ratio only needs the terms that involve block j (Density::block_log_density), so
// each block pays for its own terms, never the whole density.
//
// The q_j are the marginals of a joint proposal — "a Gaussian whose mean is a subset of the
// elements of the mean of the original variational distribution and whose covariance is the
// corresponding block-diagonal component" — or given one per block.
#pragma once

#include "inference/gaussian.hpp"
#include "inference/kernel.hpp"

#include <vector>

namespace vbn::inference {

class BlockIndependenceMH : public Kernel {
public:
    // Block proposals are the marginals of `joint` over the density's blocks (taken at the
    // first step, when the blocks are known).
    explicit BlockIndependenceMH(GaussianProposal joint);
    // One proposal per block, in block order; sizes are checked against the density's blocks
    // at the first step.
    explicit BlockIndependenceMH(std::vector<GaussianProposal> per_block);

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override { return "block independence mh"; }

    // Acceptance rate of each block's proposals since construction (empty before the first step).
    std::vector<double> block_acceptance() const;

private:
    struct Block {
        int offset = 0;
        int size = 0;
        GaussianProposal q;
        Eigen::VectorXd cached_x;  // the block's value whose log q is cached_log_q
        double cached_log_q = 0;
        bool cached = false;
        long proposed = 0;
        long accepted = 0;
    };

    void setup(const Density& target);
    double move(int b, State& state, Density& target, Rng& rng);

    GaussianProposal joint_;
    std::vector<GaussianProposal> given_;
    std::vector<Block> blocks_;
    bool ready_ = false;
    Eigen::VectorXd proposal_;  // x with one block replaced
    BlockValueCache current_;   // the state's block terms, so a move evaluates only the proposal
    KernelStats stats_;
};

}  // namespace vbn::inference
