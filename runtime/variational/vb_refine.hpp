// Correcting the variational answer with the exact posterior.
//
// The Jaakkola–Jordan bound is not tight away from ξ = |η|: its curvature 2λ(ξ) exceeds the
// logistic's g(η)(1 − g(η)), so the mean-field Gaussian is too narrow, and with many weights
// its mean drifts too (about 0.4 posterior sd at 50 parents on the paper's unimodal data).
// The exact log posterior (runtime/target/target.hpp) is cheap, so the fit can be corrected:
//
//  1. the exact posterior mode by damped Newton from the VB mean, with −∇² log p(θ | x) by
//     central differences of the analytic gradient, and the Laplace covariance there;
//  2. self-normalised importance sampling of the exact posterior with a Student-t proposal
//     centred on that mode with the Laplace covariance, widened (falling back on the VB
//     mean and covariance when Newton does not reach a mode with a positive definite
//     Hessian), mixed with a wider, heavy-tailed defensive t at the same centre so that the
//     weights stay bounded (inference::MixtureProposal), the weights Pareto-smoothed (PSIS,
//     Vehtari et al. 2024; inference/psis.hpp);
//  3. where the weights' k̂ stays at or above 0.7 (a long tail or ridge the t misses), tempering
//     instead (runtime/variational/tempered.hpp): particles carried by HMC from a wide t at
//     the same centre to the exact posterior, in several independent runs;
//  4. from the smoothed weights (or the tempered particles): the posterior mean, covariance and marginal quantiles, their
//     Monte Carlo errors, the estimate of log p(x_v) (the mean weight) and the Pareto k̂ of
//     the weights' tail, the estimate's own diagnostic: below 0.7 the estimates are reliable.
//
// The VB fit itself (and its ELBO, a true lower bound on log p(x_v)) is left as it is.
#pragma once

#include "runtime/target/target.hpp"
#include "runtime/variational/tempered.hpp"
#include "runtime/variational/vb.hpp"

#include <Eigen/Core>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vbn {

struct RefineOptions {
    long draws = 4000;        // the most importance draws in a round (fewer when `ess` is reached)
    double df = 30;           // the t proposal's degrees of freedom
    double widen = 1.1;       // the proposal's scale is widen² × the covariance it is built on
    std::uint64_t seed = 1;   // the draws use Rng(seed, 0)
    int max_newton = 60;      // Newton iterations before giving up on the mode (posterior_mode's)
    int rounds = 3;           // the most adaptive rounds: each moves the proposal to the last one's mean
    // The defensive component (Hesterberg 1995): a share of the draws comes from a wide,
    // heavy-tailed t at the same centre, so that q ≥ defensive × t_defensive_df(μ,
    // defensive_widen² Σ) everywhere and the weights p/q stay bounded where the posterior's
    // tails are heavier than the main t's (a small skewed posterior). 0 turns it off.
    // 15% of a t4 at 2.5 × the scale. Of the settings tried (shares 0.05–0.2, scales
    // ×1.5–×3; bench/evidence_calibration) the least costly that kept k̂ below 0 on the
    // evidence test's small models at 20,000 draws as well as 4,000 (0.1 at ×2 let it
    // reach 0.78 at 20,000); it costs about 15% of the ESS at 50 parameters.
    double defensive = 0.15;
    double defensive_df = 4;
    double defensive_widen = 2.5;
    // Draws by the precision they buy, not a fixed number: a round draws in batches (500,
    // then 250 at a time) until the effective sample size of its raw weights,
    // (Σ w)² / Σ w², reaches `ess` or its draws reach `draws`. Each corrected mean's Monte
    // Carlo error is then about sd / √ess (0.022 posterior sd at 2,000). 0: always `draws`.
    double ess = 2000;
    // A further round moves the proposal to the last round's weighted mean only when that is
    // more than `move` of the proposal's scale away (Mahalanobis): moving a Gaussian proposal
    // by δ scales gains a factor about exp(δ²) of ESS, under 4% below 0.2.
    double move = 0.2;
    // Threads evaluating the draws' log densities (0: one per core). The draws are made
    // on one thread and each weight depends on its draw alone, so the result does not
    // depend on the number of threads.
    int threads = 0;
    // Where the weights' k̂ stays at or above 0.7 after the rounds (when_needed), or always, the
    // answer comes instead from tempering (runtime/variational/tempered.hpp) started from the
    // last round's proposal; never: the importance weights' answer, flagged by its k̂.
    enum class Temper { when_needed, always, never };
    Temper temper = Temper::when_needed;
    TemperOptions tempering{};  // its seed and threads are the ones above
    // Set: tempering stops with ErrorKind::cancelled (the importance rounds take seconds).
    const std::atomic<bool>* interrupt = nullptr;
    // Told before tempering starts (it takes longer than `vbn fit` on the corpus models).
    std::function<void(const std::string&)> note{};
};

// −∇² log p(θ | x_v) at theta, symmetrised: exact over blocks no summed-out component
// involves (Target::complete_block_negative_hessian), by central differences of the analytic
// gradient in the columns of the other blocks. Student-t prior entries of the former take the
// scale mixture's positive curvature, or with exact_prior_curvature the exact one.
Eigen::MatrixXd negative_hessian(const Target& target, const Eigen::VectorXd& theta, Target::Workspace& ws,
                                 bool exact_prior_curvature = false);

struct NewtonMode {
    Eigen::VectorXd mode;
    Eigen::MatrixXd cov;     // the Laplace covariance (inverse negative Hessian) at the mode,
                             // with Student-t priors' exact curvature where that is positive definite
    int iterations = 0;
    bool converged = false;  // a stationary point with a positive definite negative Hessian
};

// Damped Newton with backtracking on the exact log posterior, from start: the one mode the
// correction centres its proposal on (runtime/sampling/posterior_modes.hpp searches many starts for
// every mode, for the samplers).
//
// The default limit leaves room for a start at a hidden node's saddle: from the variational
// mean of tests/corpus/sbn2 (t[1] idle) Newton took 24 steps at seed 1, and 34 from a mean
// that differed from it only in the last bits of rounding.
NewtonMode posterior_mode(const Target& target, const Eigen::VectorXd& start, int max_iterations = 60);

struct RefinedPosterior {
    Eigen::VectorXd mean;        // importance-weighted E[θ | x_v]
    Eigen::MatrixXd cov;         // Cov[θ | x_v]
    Eigen::VectorXd mcse;        // Monte Carlo standard error of each mean
    Eigen::VectorXd q5, q50, q95;  // weighted marginal quantiles
    // E|θ_k| by the same weights: what a sign-free summary (|loading| where a hidden node's
    // sign is arbitrary) averages to, which |mean| or a folded normal only approximate.
    Eigen::VectorXd mean_abs;
    // The learned scales (Target::scales(), θ's last entries, which hold log τ): mean, sd
    // and mean's Monte Carlo error of τ itself (its quantiles are exp of log τ's).
    Eigen::VectorXd scale_mean, scale_sd, scale_mcse;
    double pareto_k = 0;         // k̂ of the weights (reliable below 0.7)
    double ess = 0;              // 1 / Σ w̃² of the normalised smoothed weights
    double log_evidence = 0;     // log p(x_v) estimated by the mean weight
    double log_evidence_se = 0;  // its delta-method standard error
    long draws = 0;              // the last round's; the estimates are that round's
    long total_draws = 0;        // over every round (each cost one log density)
    int rounds = 0;              // rounds run (fewer than asked when k̂ ≥ 0.7 or a small move stops adaptation)
    bool from_mode = false;      // proposal centred on the exact mode (else on the VB fit)
    NewtonMode mode;          // the Newton result (mode.converged tells if it was used)
    double seconds = 0;
    // Set when k̂ ≥ 0.7 sent the correction to tempering: mean, cov, quantiles and the evidence
    // are then the tempered runs' (mcse: the spread of the runs' means), pareto_k stays the
    // importance weights' and ess is the particles' count.
    bool tempered = false;
    int temperatures = 0;         // the most any run needed
    int runs = 0, particles = 0;  // particles per run
    double runs_rhat = 0;         // the runs taken as chains: above 1.01 they disagree
    double acceptance = 0;        // of the HMC moves
    long sweeps = 0;              // HMC sweeps over all particles, every run and temperature
    long gradients = 0;           // the tempered runs' log density gradients
    std::string tempering_stopped;  // why tempering gave up (its budget), leaving the importance answer
    // Set where neither the importance weights nor tempering could be trusted and the exact
    // posterior was sampled instead (take_sampled; runtime/services/variational.hpp): mean to
    // mean_abs and the scales' moments are then the chains' pooled draws (mcse from their
    // ESS), ess their smallest min(bulk, tail) ESS, while pareto_k, the evidence and the
    // tempering facts stay what was tried before (evidence_reliable() says whether to trust it).
    bool sampled = false;
    std::string sampled_method;   // the method the chains ran (auto resolved)
    int chains = 0;               // chains whose draws were pooled
    long sampled_draws = 0;       // over those chains
    double sampled_rhat = 0;      // the largest over the parameters

    // Whether the evidence can be trusted: k̂ < 0.7, or tempered runs that agree.
    bool evidence_reliable() const { return tempered ? runs_rhat < 1.01 : pareto_k < 0.7; }
    // Whether the moments can be trusted: the chains' R-hat at most 1.01 where sampled, else
    // as the evidence.
    bool reliable() const { return sampled ? sampled_rhat <= 1.01 : evidence_reliable(); }
};

// Throws vbn::Error (usage) on bad options or a target without parameters, and (inference) when the proposal cannot be
// built or every weight is zero.
RefinedPosterior refine(const Target& target, const VbFit& fit, const RefineOptions& options = {});

// The answer of MCMC chains in place of the weights' or the tempered runs' (r keeps its
// pareto_k, evidence and tempering facts): `chains` holds each chain's draws × dim in θ's
// layout (log τ for the learned scales), cut to the shortest. Throws vbn::Error (inference)
// when no chain has two draws.
void take_sampled(const Target& target, const std::vector<Eigen::MatrixXd>& chains, RefinedPosterior& r);

// One line saying what the refined numbers are, for command output and logs.
std::string describe(const RefinedPosterior& r, const RefineOptions& options);

}  // namespace vbn
