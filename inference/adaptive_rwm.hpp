// Adaptive random-walk Metropolis (Haario, Saksman & Tamminen 2001; Roberts & Rosenthal 2009).
//
// During warmup the step covariance follows the chain: after n states with running covariance
// Σ_n, the proposal is
//     (1 - β) N(x, (2.38²/d) Σ_n + ε I) + β N(x, (0.1² / d) I)
// — 2.38²/d the optimal scaling for Gaussian targets, ε I keeping it positive definite, and the
// small fixed component (Roberts & Rosenthal 2009) keeping the chain moving when Σ_n is still
// poor. Until n exceeds `start` (2d by default) the first component uses the initial covariance
// if one was given, else only the fixed component is used. Σ_n is a Welford running estimate
// (no allocation per step), refactored every `refresh` iterations: the change between
// refactorings shrinks like 1/n, which is the diminishing adaptation the theory asks for.
//
// After end_warmup the proposal is frozen: a fixed symmetric mixture, so the sampling phase is
// an ordinary Metropolis kernel.
#pragma once

#include "inference/kernel.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>

namespace vbn::inference {

struct AdaptiveRandomWalkOptions {
    double regularisation = 1e-6;  // ε
    double fixed_weight = 0.05;    // β; 0 turns the fixed component off
    double fixed_sd = 0.1;         // the fixed component is N(x, fixed_sd² I / d)
    int start = 0;                 // states before Σ_n is used; 0 means 2d
    int refresh = 10;              // warmup iterations between refactorings of the covariance
};

class AdaptiveRandomWalk : public Kernel {
public:
    // initial_covariance: Σ_0 for the first iterations (empty: none). Throws
    // std::invalid_argument on an invalid covariance or option.
    explicit AdaptiveRandomWalk(const Eigen::MatrixXd& initial_covariance = {}, AdaptiveRandomWalkOptions options = {});

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override { return "adaptive rwm"; }

    // The lower Cholesky factor of the adapted component's covariance (2.38²/d) Σ_n + ε I
    // (empty while only the fixed component is used), and the number of states in Σ_n.
    const Eigen::MatrixXd& adapted_cholesky() const { return chol_; }
    bool has_adapted_component() const { return has_chol_; }
    long adapted_states() const { return n_; }

private:
    void setup(int d);
    void observe(const Eigen::VectorXd& x);
    void refactor();

    Eigen::MatrixXd initial_covariance_;
    AdaptiveRandomWalkOptions options_;
    int dim_ = -1;
    bool adapting_ = false;

    // Welford: running mean and sum of outer products of deviations.
    long n_ = 0;
    Eigen::VectorXd mean_, delta_, delta_new_;
    Eigen::MatrixXd m2_;

    Eigen::MatrixXd cov_;  // scratch for (2.38²/d) Σ_n + ε I
    Eigen::LLT<Eigen::MatrixXd> llt_;
    Eigen::MatrixXd chol_;
    bool has_chol_ = false;

    Eigen::VectorXd z_, proposal_;
    KernelStats stats_;
};

}  // namespace vbn::inference
