// The No-U-Turn sampler: Hamiltonian Monte Carlo that chooses its own trajectory length, with
// the step size and the metric tuned during warmup, as Stan (≥ 2.18) runs it.
//
// One transition draws a momentum p ~ N(0, M), then doubles a leapfrog trajectory forwards or
// backwards in time at random (Hoffman & Gelman 2014, "The No-U-Turn Sampler", §3) until
//   - the trajectory turns back on itself: the generalised no-U-turn criterion
//     p♯₋·ρ > 0 and p♯₊·ρ > 0 fails, with ρ the summed momenta and p♯ = M⁻¹p at either end
//     (Betancourt 2017, "A Conceptual Introduction to Hamiltonian Monte Carlo", App. A.4). It is
//     checked on every subtree, on the merged trajectory, and across each merge (the first
//     subtree extended by the first point of the second and vice versa), which catches U-turns
//     that fall between two subtrees' endpoints;
//   - the energy error H − H₀ of a new point exceeds 1000, or the log density or its gradient
//     is not finite there: a divergence, the sign of a region the step size cannot resolve.
//     The subtree holding that point is discarded, so a non-finite value never reaches the
//     chain;
//   - the tree reaches the maximum depth (2^depth − 1 leapfrog steps at most).
// The next state is drawn from the trajectory's points in proportion to exp(−H) (multinomial
// sampling, Betancourt 2017 App. A.3): uniformly within a subtree, and biased towards each new
// subtree when it is merged into the trajectory, which moves further per transition while
// keeping the target invariant.
//
// Adaptation (between begin_warmup and end_warmup only):
//   - the step size starts from Stan's heuristic (double or halve ε until one leapfrog step
//     from a fresh momentum crosses acceptance 0.8) and then follows dual averaging towards a
//     mean acceptance statistic δ = 0.8 (stepsize_adaptation.hpp), shrinking towards
//     μ = log(10 ε) where ε is the heuristic's result (H&G's choice; Stan's first run uses
//     the user's ε instead, its later runs the heuristic's as here);
//   - the inverse metric M⁻¹ (diagonal or dense) is re-estimated from the draws at the end of
//     each slow window (metric_adaptation.hpp), after which the heuristic runs again and dual
//     averaging restarts around the new metric (with NutsOptions::restart_stepsize_each_window
//     false, only after the last slow window);
//   - end_warmup fixes ε at the dual-averaging average exp(x̄).
// Each window's estimate is shrunk towards 1e-3 I as Stan does, or, with
// NutsOptions::initial_metric_weight, towards the initial metric: a good initial metric then
// survives the first short windows, whose estimates alone are rank-deficient once the
// dimension exceeds the window's draws.
// With no warmup the kernel uses NutsOptions::stepsize and the given metric unchanged.
//
// The initial metric is given as an inverse metric, i.e. a covariance of the target (for
// example the variational posterior covariance, or its diagonal).
//
// All working storage is sized at construction, so step() does not allocate.
#pragma once

#include "inference/kernel.hpp"
#include "inference/metric_adaptation.hpp"
#include "inference/stepsize_adaptation.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include <memory>
#include <string>
#include <vector>

namespace vbn::inference {

// The Euclidean–Gaussian kinetic energy K(p) = ½ p'M⁻¹p, with M⁻¹ diagonal or dense.
class EuclideanMetric {
public:
    // The identity, of either kind.
    EuclideanMetric(int dim, MetricKind kind);
    // From the diagonal of M⁻¹ (variances: positive and finite).
    static EuclideanMetric diagonal(const Eigen::VectorXd& inverse_diagonal);
    // From M⁻¹ (a covariance: symmetric positive definite, finite).
    static EuclideanMetric dense(const Eigen::MatrixXd& inverse);

    MetricKind kind() const { return kind_; }
    int dim() const { return dim_; }

    // Replace M⁻¹ (same kind and size); throws std::invalid_argument if it is not valid.
    void set_inverse_diagonal(const Eigen::VectorXd& inverse_diagonal);
    void set_inverse(const Eigen::MatrixXd& inverse);

    // p♯ = M⁻¹p, the velocity dK/dp.
    void sharp(const Eigen::VectorXd& p, Eigen::VectorXd& out) const;
    // p ~ N(0, M).
    void sample_momentum(Rng& rng, Eigen::VectorXd& p) const;

    // M⁻¹'s diagonal (for both kinds) and M⁻¹ as a full matrix.
    Eigen::VectorXd inverse_diagonal() const;
    Eigen::MatrixXd inverse() const;

private:
    MetricKind kind_;
    int dim_;
    Eigen::VectorXd inv_diag_;        // diagonal: M⁻¹'s diagonal
    Eigen::VectorXd momentum_scale_;  // diagonal: sd of p, 1 / sqrt(M⁻¹_ii)
    Eigen::MatrixXd inv_;             // dense: M⁻¹
    Eigen::LLT<Eigen::MatrixXd> llt_; // dense: M⁻¹ = L L', so p = L'⁻¹ z has covariance M
};

struct NutsOptions {
    int max_depth = 10;            // at most 2^max_depth − 1 leapfrog steps; 1..30
    double max_energy_error = 1000;  // H − H₀ beyond this is a divergence
    double stepsize = 1;           // ε before adaptation, and the heuristic's start
    bool adapt_stepsize = true;    // heuristic + dual averaging during warmup
    bool adapt_metric = true;      // windowed estimation of M⁻¹ during warmup
    // Each window's estimate of M⁻¹ from n draws is shrunk towards the initial metric with
    // this many pseudo-draws, (n S + w M⁻¹₀) / (n + w) (metric_adaptation.hpp); 0 shrinks it
    // towards 1e-3 I with 5, as Stan does. For an initial metric that is already a good
    // covariance estimate (a Laplace fit), a weight of the order of the dimension.
    double initial_metric_weight = 0;
    // Stan searches the step size again and restarts dual averaging after every slow window.
    // false: only the last window's end does (so the terminal buffer fixes the sampling step
    // size exactly as Stan's does); after the earlier windows dual averaging carries on, its
    // iterates steadied by what it has learnt. For an initial metric that the windows only
    // adjust (a Laplace fit with initial_metric_weight of the order of the dimension or more):
    // each restart re-explores from 10 ε, and its low acceptance sends the next iterates to
    // trajectories several times the adapted length.
    bool restart_stepsize_each_window = true;
    DualAveragingOptions dual_averaging;
    MetricWindowOptions windows;
};

// Stats (collect_stats): one KernelStats named "nuts" with proposed = transitions since
// construction and accepted = the sum of their accept_stat rounded to the nearest integer, so
// KernelStats::rate() is the mean acceptance statistic (to within 0.5 / proposed; the
// difference of two snapshots, e.g. the sampling phase alone, to within 1 / proposed), the
// figure CmdStan reports as the mean of accept_stat__. Divergences are counted separately.
class NutsKernel : public Kernel {
public:
    // Unit metric of the given kind over `dim` coordinates.
    NutsKernel(int dim, MetricKind kind, NutsOptions options = {});
    // Starts from the given metric. Throws std::invalid_argument on bad options.
    NutsKernel(EuclideanMetric metric, NutsOptions options = {});

    // Throws std::invalid_argument if the state or target does not have the metric's
    // dimension, std::domain_error if the log density or its gradient is not finite at the
    // current state, std::runtime_error if warmup finds no usable step size (an improper or
    // discontinuous target) or the metric estimate overflows.
    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override { return "nuts"; }

    // For CmdStan's "# Step size = ..." and inverse mass matrix comment lines.
    double stepsize() const { return stepsize_; }
    const EuclideanMetric& metric() const { return metric_; }

    // Divergent transitions since construction.
    long divergences() const { return divergences_; }
    bool warming_up() const { return warmup_; }

private:
    struct PhasePoint {
        Eigen::VectorXd x;     // position
        Eigen::VectorXd p;     // momentum
        Eigen::VectorXd grad;  // ∇ log p(x)
        double lp = 0;         // log p(x)
        void resize(int d);
    };
    // Scratch of one recursion level of build_tree (one frame per depth is live at a time).
    struct TreeLevel {
        PhasePoint propose_final;
        Eigen::VectorXd p_init_end, p_sharp_init_end;
        Eigen::VectorXd p_final_beg, p_sharp_final_beg;
        Eigen::VectorXd rho_init, rho_final, rho_subtree;
        void resize(int d);
    };

    void allocate();
    void load_current(const State& state, Density& target);
    bool leapfrog(PhasePoint& z, double epsilon, Density& target);
    double hamiltonian(const PhasePoint& z);
    void transition(Density& target, Rng& rng, TransitionInfo& info);
    bool build_tree(int depth, double epsilon, Density& target, Rng& rng, PhasePoint& propose,
                    Eigen::VectorXd& p_sharp_beg, Eigen::VectorXd& p_sharp_end, Eigen::VectorXd& p_beg,
                    Eigen::VectorXd& p_end, Eigen::VectorXd& rho, double& log_sum_weight);
    void find_initial_stepsize(Density& target, Rng& rng);
    void adapt(Density& target, Rng& rng, double accept_stat);

    EuclideanMetric metric_;
    NutsOptions options_;
    DualAveraging dual_averaging_;
    MetricAdaptation metric_adaptation_;
    double stepsize_;

    bool warmup_ = false;
    bool stepsize_found_ = false;
    int warmup_iteration_ = 0;

    long transitions_ = 0;
    double accept_stat_sum_ = 0;
    long divergences_ = 0;

    // z_ holds the current point with its gradient for this target (set after a transition).
    const Density* current_target_ = nullptr;

    // Transition workspace.
    double h0_ = 0;
    int n_leapfrog_ = 0;
    double sum_metro_prob_ = 0;
    bool divergent_ = false;
    PhasePoint z_;  // the point being integrated
    PhasePoint z_fwd_, z_bck_, z_sample_, z_propose_, z_trial_;
    Eigen::VectorXd p_fwd_fwd_, p_sharp_fwd_fwd_, p_fwd_bck_, p_sharp_fwd_bck_;
    Eigen::VectorXd p_bck_fwd_, p_sharp_bck_fwd_, p_bck_bck_, p_sharp_bck_bck_;
    Eigen::VectorXd rho_, rho_fwd_, rho_bck_, rho_extended_, sharp_;
    std::vector<TreeLevel> levels_;
};

}  // namespace vbn::inference
