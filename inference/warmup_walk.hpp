// A kernel's warmup helped by a per-block random walk where it stalls.
//
// In the first helped_iterations(warmup) warmup iterations, the walk moves the blocks that the
// main kernel's previous step left where they were, before main steps again; after them main
// steps alone, so the sampling phase is main's kernel unchanged. It is for independence
// samplers whose chain starts where the proposal is far too light (p/q huge there, as in a
// logistic posterior's tail beyond a t fitted to its bulk): such a chain may never accept a
// move and stays at its start, while a random walk's local moves climb the gradient into the
// bulk in a few dozen steps. Blocks that main moves cost the walk nothing: at 10^6 rows one
// walk step is a pass over every row, and a walk in each of 100 iterations added 75% to the
// warmup of `bench/scale.sh`'s logistic regression. Warmup transitions need only leave p
// invariant, which each component does. The transition reported is main's, and the leaves and
// counters are main's alone.
#pragma once

#include "inference/kernel.hpp"
#include "inference/random_walk.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <memory>
#include <vector>

namespace vbn::inference {

class WarmupWalk : public Kernel {
public:
    // walk: a per-block random walk (RandomWalkOptions::mode per_block; its `only` is set here).
    WarmupWalk(std::unique_ptr<Kernel> main, RandomWalk walk);
    WarmupWalk(const WarmupWalk& other);
    WarmupWalk& operator=(const WarmupWalk&) = delete;

    // A tenth of the warmup, and at least 50 iterations (or all of a shorter warmup): the
    // start is what the walk is for.
    static int helped_iterations(int warmup) { return std::min(warmup, std::max(50, warmup / 10)); }

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    int leaf_count() const override;
    std::string name() const override;

    // Walk steps taken (each over the stalled blocks of one iteration).
    long walks() const { return walks_; }

private:
    std::unique_ptr<Kernel> main_;
    RandomWalk walk_;
    int helping_ = 0;              // helped iterations left
    std::vector<char> stalled_;    // per block: main's last step left it in place
    Eigen::VectorXd before_;       // the state before main's step (while helping)
    long walks_ = 0;
};

}  // namespace vbn::inference
