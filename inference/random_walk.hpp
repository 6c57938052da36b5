// Random-walk Metropolis, over the whole vector or block by block (variational-mcmc.txt §4.3:
// "a random walk Metropolis (also in blocks)").
//
// A step proposes x* = x + s L z, z ~ N(0, I), with L L' = Σ a given covariance (for instance
// the variational one) or, per block, Σ's diagonal block for that block. Per block, one step
// sweeps the blocks in order and each move is judged by block_log_density alone, so it costs
// only that block's terms.
//
// The scale s (one per block) starts at 2.38 / sqrt(d) (Roberts & Rosenthal 2001) and, between
// begin_warmup and end_warmup only, follows a Robbins–Monro recursion on log s towards the
// acceptance rate that is optimal for Gaussian targets: 0.44 for one coordinate, 0.234 for
// more. After end_warmup it never changes, so the sampling phase is a fixed reversible kernel.
#pragma once

#include "inference/gaussian.hpp"
#include "inference/kernel.hpp"

#include <vector>

namespace vbn::inference {

enum class BlockMode {
    whole,      // one move of all coordinates
    per_block,  // one move per block of the density, in order
};

struct RandomWalkOptions {
    BlockMode mode = BlockMode::whole;
    double initial_scale = 0;  // s at the start; 0 means 2.38 / sqrt(block size)
    double target_accept = 0;  // 0 means 0.44 for one-coordinate blocks, else 0.234
    bool adapt = true;         // tune s during warmup
    // per_block only: which of the density's blocks move (one flag per block, checked at each
    // step); empty: all.
    std::vector<char> only{};
};

class RandomWalk : public Kernel {
public:
    // covariance: the shape of the steps (dim × dim, symmetric positive definite); empty means
    // the identity. Throws std::invalid_argument when it is not a valid covariance.
    explicit RandomWalk(const Eigen::MatrixXd& covariance = {}, RandomWalkOptions options = {});
    // A block-diagonal covariance, its diagonal blocks consecutive along θ (memory O(Σ block²)).
    RandomWalk(const std::vector<Eigen::MatrixXd>& block_covariances, RandomWalkOptions options);

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override;

    // Which blocks the next steps move (RandomWalkOptions::only); assigning flags of the same
    // length again allocates nothing.
    void set_only(const std::vector<char>& only) { options_.only = only; }

    // The current scale s of each block (one entry in whole mode); empty before the first
    // step, when the density's blocks are not yet known.
    std::vector<double> scales() const;
    // Acceptance rate of each block's moves since construction.
    std::vector<double> block_acceptance() const;

private:
    struct Block {
        int offset = 0;
        int size = 0;
        GaussianProposal steps;  // N(0, Σ_bb); made when the block first moves (dimension 0 before)
        double log_scale = 0;
        double target_accept = 0.234;
        long proposed = 0;
        long accepted = 0;
    };

    void setup(const Density& target);
    void adapt(Block& block, double accept_prob);
    double move(int b, State& state, Density& target, Rng& rng);

    void check_options();

    GaussianProposal shape_;     // N(0, Σ); dimension 0: the identity
    GaussianProposal identity_;  // without Σ: the identity as d 1 × 1 blocks (built by setup)
    // What the blocks' steps are taken from: N(0, Σ), or the identity.
    const GaussianProposal& steps_source() const { return shape_.dim() > 0 ? shape_ : identity_; }
    RandomWalkOptions options_;
    std::vector<Block> blocks_;
    bool ready_ = false;  // blocks_ built from the density (at the first step)
    Eigen::VectorXd proposal_;  // the full proposed vector (per block: x with one block changed)
    bool adapting_ = false;
    long adapt_iterations_ = 0;
    BlockValueCache current_;   // per block: the state's block terms, reused while valid
    KernelStats stats_;
};

}  // namespace vbn::inference
