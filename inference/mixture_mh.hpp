// Independence Metropolis–Hastings with a fixed mixture of Gaussian or Student-t proposals,
// q(x) = Σ_k π_k q_k(x): for posteriors with several modes, one component per mode (e.g. at
// the modes of the exact log posterior with their Laplace covariances), so that a single
// move can jump between modes that local moves rarely cross. Acceptance min(1, w(x*)/w(x))
// with w = p / q and q the whole mixture, so the kernel leaves p invariant whatever the
// components; it is uniformly ergodic when w is bounded (heavy-tailed components help).
#pragma once

#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel.hpp"

#include <vector>

namespace vbn::inference {

class MixtureProposal {
public:
    // Components of one dimension and positive weights (normalised here). Throws
    // std::invalid_argument otherwise.
    MixtureProposal(std::vector<GaussianProposal> components, std::vector<double> weights);

    int dim() const { return components_.front().dim(); }
    int size() const { return static_cast<int>(components_.size()); }
    const GaussianProposal& component(int k) const { return components_[static_cast<std::size_t>(k)]; }
    double weight(int k) const { return std::exp(log_weights_[static_cast<std::size_t>(k)]); }

    double log_density(const Eigen::Ref<const Eigen::VectorXd>& x);  // uses scratch, no allocation
    void sample(Rng& rng, Eigen::Ref<Eigen::VectorXd> out);

private:
    std::vector<GaussianProposal> components_;
    std::vector<double> log_weights_;
    std::vector<double> terms_;  // scratch for log_density
};

class MixtureIndependenceMH : public Kernel {
public:
    explicit MixtureIndependenceMH(MixtureProposal proposal);

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override;

    const MixtureProposal& proposal() const { return q_; }

private:
    MixtureProposal q_;
    IndependenceCache cache_;
    KernelStats stats_;
};

}  // namespace vbn::inference
