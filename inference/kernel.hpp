// Markov kernels that leave a target density invariant, and the state they move.
//
// A kernel is a value owned by one chain (clone() gives each chain its own copy with its own
// adaptation state). Kernels compose: a mixture (with probability ν take A, else B —
// variational-mcmc.txt Fig. 7) and a cycle (A then B) are kernels too (kernel_combinators.hpp).
// Output and progress never live inside a kernel: a step reports what it did through
// TransitionInfo and per-kernel counters, and the chain runner writes.
#pragma once

#include "inference/density.hpp"
#include "inference/rng.hpp"

#include <Eigen/Core>

#include <memory>
#include <string>
#include <vector>

namespace vbn::inference {

// The chain's position and the log density there (kept in step with x by every kernel).
struct State {
    Eigen::VectorXd x;
    double lp = 0;
};

// What one transition did, for the CmdStan CSV columns (docs/design.md §4); kernels that are not
// HMC leave the HMC fields at their neutral values.
class EuclideanMetric;

struct TransitionInfo {
    double accept_stat = 1;  // MH: min(1, ratio) of the proposal; HMC: mean over the tree
    double stepsize = 0;
    int treedepth = 0;
    int n_leapfrog = 0;
    bool divergent = false;
    double energy = 0;
    int kernel = -1;         // which leaf kernel moved (index into the chain's kernel list)
    bool regenerated = false;
    // HMC: the metric the transition used (after warmup, the adapted one), for the CSV's
    // adaptation block; null for other kernels. Points into the kernel.
    const EuclideanMetric* metric = nullptr;
};

// Acceptance counters of one leaf kernel.
struct KernelStats {
    std::string name;
    long proposed = 0;
    long accepted = 0;
    double rate() const { return proposed > 0 ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0; }
};

// One sweep of a block kernel: move(b) for every block b of non-zero size, in order, each
// returning its min(1, ratio). The result, their mean (1 if no block moved), is the sweep's
// TransitionInfo::accept_stat.
template <class Blocks, class Move>
double sweep_blocks(const Blocks& blocks, Move&& move) {
    double accept_sum = 0;
    int moves = 0;
    for (int b = 0; b < static_cast<int>(blocks.size()); ++b) {
        if (blocks[static_cast<std::size_t>(b)].size == 0) continue;
        accept_sum += move(b);
        ++moves;
    }
    return moves > 0 ? accept_sum / moves : 1.0;
}

// The acceptance rate of each block of a block kernel (blocks counting `proposed` and
// `accepted` moves), 0 for a block not yet moved.
template <class Blocks>
std::vector<double> block_acceptance_rates(const Blocks& blocks) {
    std::vector<double> rates;
    for (const auto& b : blocks) rates.push_back(KernelStats{{}, b.proposed, b.accepted}.rate());
    return rates;
}

class Kernel {
public:
    virtual ~Kernel() = default;

    // One transition from `state`, leaving the target invariant (outside warmup).
    virtual void step(State& state, Density& target, Rng& rng, TransitionInfo& info) = 0;

    // Warmup: kernels may adapt (step sizes, scales, metrics) between begin_warmup and
    // end_warmup, and must be frozen afterwards (except regeneration-based adaptation,
    // which is valid at regeneration times).
    virtual void begin_warmup(int iterations) { (void)iterations; }
    virtual void end_warmup() {}

    virtual std::unique_ptr<Kernel> clone() const = 0;

    // Appends one KernelStats per leaf kernel (combinators recurse).
    virtual void collect_stats(std::vector<KernelStats>& out) const = 0;

    // Number of leaf kernels below this one (1 for a leaf); TransitionInfo::kernel indexes
    // them in collect_stats order.
    virtual int leaf_count() const { return 1; }

    virtual std::string name() const = 0;
};

}  // namespace vbn::inference
