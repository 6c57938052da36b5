// Kernels built from kernels (variational-mcmc.txt §4.3; Tierney 1994): if K1 and K2 leave p
// invariant, so do the mixture ν K1 + (1 - ν) K2 (Fig. 7: "if u < ν perform the block MH
// algorithm with the variational proposal, else a block Metropolis algorithm with a random walk
// proposal") and the cycle K1 K2.
//
// Leaves are numbered depth-first in collect_stats order; TransitionInfo::kernel names the leaf
// that moved (for a cycle, the last leaf that stepped, with accept_stat the mean over the
// cycle's components). Warmup calls, cloning and statistics reach every leaf.
#pragma once

#include "inference/kernel.hpp"

#include <memory>
#include <vector>

namespace vbn::inference {

class Mixture : public Kernel {
public:
    // With probability nu step `first`, else `second`; 0 <= nu <= 1.
    Mixture(double nu, std::unique_ptr<Kernel> first, std::unique_ptr<Kernel> second);
    Mixture(double nu, const Kernel& first, const Kernel& second);
    Mixture(const Mixture& other);
    Mixture& operator=(const Mixture&) = delete;

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    int leaf_count() const override;
    std::string name() const override;

    double nu() const { return nu_; }

private:
    double nu_;
    std::unique_ptr<Kernel> first_, second_;
};

class Cycle : public Kernel {
public:
    // Steps every component once, in order.
    explicit Cycle(std::vector<std::unique_ptr<Kernel>> components);
    Cycle(const Cycle& other);
    Cycle& operator=(const Cycle&) = delete;

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    int leaf_count() const override;
    std::string name() const override;

private:
    std::vector<std::unique_ptr<Kernel>> components_;
};

// Cycle(a, b, ...) from kernels held by value or reference (each is cloned).
template <class... Kernels>
std::unique_ptr<Cycle> make_cycle(const Kernels&... kernels) {
    std::vector<std::unique_ptr<Kernel>> parts;
    (parts.push_back(kernels.clone()), ...);
    return std::make_unique<Cycle>(std::move(parts));
}

}  // namespace vbn::inference
