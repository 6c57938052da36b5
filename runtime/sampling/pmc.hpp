// A t-mixture independence proposal fitted to the exact posterior by population Monte Carlo
// (Cappé, Douc, Guillin, Marin & Robert 2008, "Adaptive importance sampling in general mixture
// classes"): the Laplace approximations at the modes (runtime/sampling/posterior_modes.hpp) fit a skewed
// posterior with a long curved ridge poorly, so independence MH from them accepts about half of
// its moves. Starting from them, each round draws from the current mixture, weights the draws
// by p / q with the exact log posterior, and moves the components' weights, locations and
// scales by weighted EM for a mixture of t's (fixed degrees of freedom, latent scale variables).
// The prior itself, a defensive component (Hesterberg 1995) kept in every round and in the
// result with weight α, bounds the weights: p(θ | x) / q(θ) ≤ p(θ) L(θ) / (p(x) α p(θ)) ≤
// 1 / (α p(x)) as the likelihood L ≤ 1, so the independence chain is uniformly ergodic. The
// fitted components are widened a little (×1.15 in scale): the fit sees few draws in the far
// tail of a ridge, and a chain sticks where q is too light.
//
// Everything happens once, before sampling, with its own random stream: the chains then use a
// fixed proposal, so the independence MH kernel leaves the exact posterior invariant.
#pragma once

#include "inference/mixture_mh.hpp"
#include "inference/rng.hpp"
#include "runtime/sampling/posterior_modes.hpp"

#include <Eigen/Core>

#include <limits>
#include <vector>

namespace vbn {

class Target;
namespace ir {
struct Graph;
}

// The prior of θ, N(mean, cov) with cov block diagonal (each block's prior is a Gaussian;
// Student-t entries at their scale mixture's λ = 1, N(μ, s²)).
void prior_gaussian(const ir::Graph& graph, Eigen::VectorXd& mean, Eigen::MatrixXd& cov);
// The smallest ν of the prior's Student-t entries (ir::Block::prior_df), ∞ if it has none.
double heavy_prior_df(const ir::Graph& graph);
// Its mean alone (no dense covariance, for models of any size).
Eigen::VectorXd prior_mean(const ir::Graph& graph);

struct PmcOptions {
    int components_per_mode = 4;   // each mode's share of components (a ridge needs several)
    int max_components = 8;        // fitted components in all (the prior apart)
    long draws_per_dim = 500;      // draws per round: draws_per_dim × (dim + 2)
    int rounds = 6;                // rounds of drawing and refitting, at most
    int min_rounds = 3;            // rounds before good_enough may stop the fit
    double good_enough = 0.9;      // stop when the weights' ESS fraction reaches this
    int em_iterations = 5;         // weighted EM iterations on each round's draws
    double df = 8;                 // the fitted components' degrees of freedom
    double widen = 1.15;           // the fitted components' scales × widen² in the proposal
    double prior_weight = 0.05;    // the prior's share: p / q ≤ 1 / (prior_weight × p(x))
    // The prior component's degrees of freedom: ∞ (a Gaussian, the prior itself) unless the
    // prior has Student-t entries, whose tails a t with their smallest ν covers
    // (heavy_prior_df).
    double prior_df = std::numeric_limits<double>::infinity();
    int threads = 1;               // for the densities and EM; the result does not depend on it
};

struct PmcFit {
    inference::MixtureProposal proposal;  // the fitted components and the prior
    double ess_fraction = 0;          // of its own importance weights, (Σw)² / (N Σw²), in (0, 1]
    double pareto_k = 0;              // k̂ of those weights (PSIS; reliable below 0.7)
    double initial_ess_fraction = 0;  // the same for the modes' Laplace mixture it started from
    int rounds = 0;                   // rounds that refitted the components
};

// The modes' Laplace masses exp(log_mass), normalised (modes non-empty, as sorted by
// find_posterior_modes).
std::vector<double> laplace_weights(const std::vector<PosteriorMode>& modes);

// t_df's at the modes with the Laplace covariances × inflation, weighted by the Laplace masses
// floored at 10% / modes: the start of the fit below, and varmix's proposal before it.
inference::MixtureProposal laplace_mixture(const std::vector<PosteriorMode>& modes, double df, double inflation);

// modes: non-empty, from find_posterior_modes; the prior N(prior_mean, prior_cov) (a proper
// Gaussian: every block's prior is one). The first round draws from laplace_mixture(modes,
// start_df, start_inflation) with the prior; then weighted k-means++ seeds the components on
// its weighted draws and EM refits them every round. Of the proposals tried, the one whose
// importance weights had the largest ESS is returned. Throws std::invalid_argument on empty
// modes, a prior of the wrong size or not positive definite, or bad options.
PmcFit fit_pmc_mixture(const Target& target, const std::vector<PosteriorMode>& modes, const Eigen::VectorXd& prior_mean,
                       const Eigen::MatrixXd& prior_cov, double start_df, double start_inflation, inference::Rng& rng,
                       const PmcOptions& options = {});

}  // namespace vbn
