// The learned prior scales' step (ir::Graph::scales): after each sweep of a method that moves
// the weights block by block (varblock, gibbs), every scale's log τ by slice sampling from its
// conditional given the weights.
//
// Given the weights w_j it scales (prior means μ_j), τ's conditional depends on nothing else:
// in η = log τ, with the Jacobian,
//     log p(η | w) = log p_η(η) − n η − ½ e^{−2η} Σ_j (w_j − μ_j)² + const
// (log p_η: runtime/target/scale_prior.hpp),
// which is also exactly how the log density of the whole state changes with η, so the step
// keeps State::lp by adding the change. Slice sampling with stepping out and shrinkage (Neal
// 2003, Fig. 3 and 5) leaves it invariant whatever its width; the width adapts in warmup to
// the mean distance moved.
#pragma once

#include "inference/kernel.hpp"
#include "lang/ir.hpp"

#include <vector>

namespace vbn {

class ScaleSliceKernel : public inference::Kernel {
public:
    explicit ScaleSliceKernel(const ir::Graph& graph);

    void step(inference::State& state, inference::Density& target, inference::Rng& rng,
              inference::TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<inference::Kernel> clone() const override;
    void collect_stats(std::vector<inference::KernelStats>& out) const override;
    std::string name() const override { return "scale-slice"; }

    struct Scale {
        ir::Scale prior;   // θ index, prior, the weights it scales and their means
        double width = 1;  // the slice's initial interval in η
        double moved = 0;  // warmup: Σ |Δη|, and steps taken
        long steps = 0;
    };

private:
    std::vector<Scale> scales_;
    bool adapting_ = false;
    long updates_ = 0;  // scale updates, for the stats
};

// Σ_j (w_j − μ_j)² over the weights a scale scales, at the state x.
double scaled_sum_of_squares(const ir::Scale& scale, const Eigen::VectorXd& x);

}  // namespace vbn
