// The independence kernels' proposal from the exact posterior rather than the variational fit.
//
// The Jaakkola–Jordan Gaussian is too narrow (its curvature 2λ(ξ) exceeds the logistic's) and
// drifts off the posterior mean as blocks grow (runtime/variational/vb_refine.hpp): 8–39% too narrow and
// up to 0.4 sd off-centre at 50 weights on the paper's unimodal data, which caps what an
// independence sampler proposing from it can reach. When every block of the target is
// separable (nothing summed out couples two blocks, so the posterior is a product over blocks),
// the proposal is built per block from the exact posterior instead:
//
//  1. the exact posterior mode and its Laplace covariance, by Newton from the VB mean or from
//     a given start (posterior_mode in runtime/variational/vb_refine.hpp);
//  2. per block, a Student-t at the block's mode with its block of the Laplace covariance
//     (optionally widened); a complete block's t is moved towards the posterior mean by the
//     mean's next Laplace term, or, up to map_max_dim weights, skewed by the triangular map of
//     its third derivatives (inference/triangular_map.hpp), which carries that correction too;
//  3. a pilot check per block: pilot_draws importance draws of that block against its exact
//     conditional (Target::block_log_density, which then depends on the block alone), and the
//     Pareto k̂ and importance ESS of their weights (inference/psis.hpp). Where k̂ ≤ good_k,
//     the t is also tried with its centre moved to the pilot's weighted mean (a skewed
//     posterior's mean is off its mode). While the best so far has k̂ > good_k or an ESS below
//     good_ess of the draws, the t is re-fitted (refit_df, refit_widen) to the last pilot's
//     Pareto-smoothed weighted mean and covariance, at most max_rounds rounds in all, until
//     two rounds in a row do not improve. The one kept is the reliable one (k̂ ≤ 0.7) with the
//     largest ESS, else the one with the smallest k̂.
//
// Step 3 is what handles posteriors the Laplace approximation describes badly (a prior cut by
// a logistic step far from its mode: tests/runtime/test_edge_cases.cpp, weights near ±1e3).
// The draws use their own stream of the seed, so the same seed gives the same proposal.
#pragma once

#include "inference/gaussian.hpp"
#include "inference/parallel.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vbn {

struct LaplaceProposalOptions {
    double df = 30;          // the t's degrees of freedom
    double widen = 1.0;      // the Laplace covariance × widen² (on the paper's unimodal data 1.0
                             // gives the largest ESS; the pilot check catches where it is too narrow)
    double refit_df = 5;       // a re-fitted t's degrees of freedom: re-fits are for posteriors the
                               // Laplace fit misses, whose tails may be far from Gaussian
    double refit_widen = 1.1;  // a re-fitted covariance × refit_widen², so that re-fits grow
                               // towards a posterior wider than the last proposal
    long pilot_draws = 500;  // importance draws per block and round
    int max_rounds = 6;      // pilot rounds after the first, at most
    double good_k = 0.5;     // k̂ at most this and importance ESS at least good_ess of the
    double good_ess = 0.5;   // draws: the block's proposal is kept (after one re-centring)
    bool recentre = true;    // a good fit also tries its centre moved to the pilot's weighted mean
    bool mean_shift = true;  // complete blocks centred at the mode plus the mean's next Laplace term
    // ... or, with map_min_dim to map_max_dim weights, skewed by their third derivatives' map
    // instead (docs/methods.md, "The triangular map"). Below 21 weights the map's gain in ESS
    // (20 weights: min bulk-ESS +13%) is eaten by its cost per draw; at 50 weights it is what
    // lets one independence proposal move the whole block (varblock then does not split it:
    // inference::BlockSplit), at twice NUTS's bulk-ESS per second on the paper's data.
    bool skew_map = true;
    int map_min_dim = 21;
    int map_max_dim = inference::TriangularMap::max_dim;  // the map costs rows · d³/3 to build, d³/6 per draw
    int max_dim = 200;       // above this many parameters the dense Newton is not attempted: Newton
                             // goes block by block where every block is complete, else no proposal
    int max_newton = 30;     // Newton iterations before it is given up
    // For a kernel that proposes θ whole (varmh): where summed-out values couple the blocks,
    // one t over all of θ at the mode, piloted against the whole posterior, instead of no
    // proposal. Separable blocks keep their own t's (joint() puts them together).
    bool whole = false;
    // ... and that t also tried with split scales (Geweke's split-t, inference/gaussian.hpp): each
    // whitened axis stretched on each side of the centre, by up to max_split, as far as the
    // posterior's log density, probed along it out to 6 Laplace sds, is wider there than the
    // Laplace fit; kept where its pilot still fits well.
    bool split = true;
    double max_split = 4.0;
    std::uint64_t seed = 1;  // pilot draws come from Rng(seed, 3)
    int threads = 1;         // threads that make and evaluate the pilot draws (the result does not depend on it)
    inference::ChunkShare* share = nullptr;  // instead: this thread and the one joined to it
};

struct LaplaceProposal {
    std::vector<inference::GaussianProposal> blocks;  // one per target block, in block order;
                                                      // with `whole`, one over all of θ
    std::vector<double> pareto_k;                     // per block: pilot k̂ of the proposal kept
    std::vector<double> ess;                          // per block: its pilot importance ESS / draws
    std::vector<int> refits;                          // per block: the round of the one kept (0: Laplace as is)
    std::vector<char> mean_shifted;                   // per block: kept round 0 corrected towards the mean
    std::vector<char> skew_mapped;                    // per block: ... by the triangular map (a subset)
    std::vector<char> split;                          // per block: the one kept has split scales
    int newton_iterations = 0;
    double seconds = 0;
    bool whole = false;  // blocks holds one t over all of θ (coupled blocks, options.whole)

    double max_k() const;
    // The product of the block proposals as one t over θ with a block-diagonal scale matrix
    // (for kernels that propose θ whole); with one block, that block's proposal (map included;
    // with several, their maps are left out).
    inference::GaussianProposal joint() const;
    // One line for notes and logs.
    std::string describe(const LaplaceProposalOptions& options) const;
};

// The proposal above, or nothing (with the reason in *why_not) when a block is not separable
// (and options.whole is off),
// the target has more than max_dim parameters and some block is not complete, or Newton does
// not reach a mode with a positive definite Hessian: callers then keep the variational proposal.
std::optional<LaplaceProposal> laplace_proposal(const Target& target, const VbFit& fit,
                                                const LaplaceProposalOptions& options = {},
                                                std::string* why_not = nullptr);

// The same with Newton started at `start` instead of the VB mean: where the posterior has one
// mode (every node observed, so each block is a Bayesian logistic regression, log-concave),
// the proposal needs no variational fit and can be built while that fit runs.
std::optional<LaplaceProposal> laplace_proposal(const Target& target, const Eigen::VectorXd& start,
                                                const LaplaceProposalOptions& options = {},
                                                std::string* why_not = nullptr);

}  // namespace vbn
