// `vbn fit`: the variational fit, then MCMC chains whose kernels the method preset builds
// from it (variational-mcmc.txt §4), run in parallel and reproducibly.
//
// The stages of fit(): validate the options, choose the method (runtime/sampling/methods.hpp,
// the registry), prepare the posterior (target, variational fit, the exact posterior's
// proposal or modes), initial points, build the kernel (runtime/sampling/kernels.hpp), run
// the chains.
#pragma once

#include "inference/block_mh.hpp"
#include "inference/chains.hpp"
#include "inference/signed_permutation.hpp"
#include "lang/approximate_symmetry.hpp"
#include "lang/ir.hpp"
#include "lang/symmetry.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/sampling/laplace_proposal.hpp"
#include "runtime/sampling/methods.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vbn {

class Target;

// NUTS adapts a dense metric on a model of dim weights (else a diagonal one).
constexpr bool nuts_dense_metric(int dim) { return dim <= max_dense_dim; }

// The draws per chain `vbn fit` may run on to when --draws is not given: four times the
// default 1000, so that a posterior whose chains mix four times slower than usual still
// reaches 100 ESS per chain (docs/methods.md, "Draws until the ESS is enough").
constexpr int default_max_draws = 4000;

struct FitOptions {
    std::string method = "auto";
    int chains = 4;
    int warmup = 1000;
    int draws = 1000;
    // Above draws: where, after them, some parameter's R-hat is above 1.01 or its bulk- or
    // tail-ESS below 100 per chain, the chains run on, up to max_draws per chain
    // (runtime/services/extension.hpp; applied by runtime/services/, not by fit() below). At
    // most draws: exactly draws. `vbn fit` sets 4000 when --draws is not given.
    int max_draws = 0;
    int threads = 2;
    std::uint64_t seed = 1;
    bool keep_draws = true;
    VbOptions vb;
    // Proposal settings of the variational kernels: Student-t degrees of freedom and the
    // factor on the variational covariance (VB underestimates variances; §4.1 Corollary 1).
    double proposal_df = 10;
    double proposal_inflation = 1.5;
    double mixture_nu = 0.5;      // varmix: probability of the variational block kernel
    // Where the independence kernels (varmh, varblock, varmix's block moves, regen) propose
    // from: "laplace" builds the proposal from the exact posterior's mode and Laplace
    // covariance, checked per block by importance draws (runtime/sampling/laplace_proposal.hpp), when
    // every block is separable and Newton converges, else the variational fit; "vb" always
    // the variational fit with proposal_df and proposal_inflation (the paper's VarMCMC).
    std::string proposal = "laplace";
    LaplaceProposalOptions laplace;
    // varblock: blocks of more than 20 weights whose proposal carries no triangular map are
    // moved in whitened sub-blocks of at most 10 coordinates, re-centred on the warmup's draws
    // (inference/block_mh.hpp); an unskewed independence proposal for a whole block of 50
    // weights sticks (docs/methods.md, "Whitened sub-blocks").
    inference::BlockSplit varblock_split{20, 10, 0, 1.1, true};
    // varblock's whole blocks (at most varblock_split.above weights, or skewed by a map) whose proposal is the
    // exact posterior's Laplace fit: a t with varblock_df degrees of freedom rather than
    // laplace.df (0: laplace.df), re-centred on each chain's warmup draws unless the pilot kept a
    // centre with the skewness correction (LaplaceProposalOptions::mean_shift) (inference/block_mh.hpp;
    // docs/methods.md, "Whole blocks re-centred in warmup").
    double varblock_df = 100;
    inference::BlockRecentre varblock_recentre{true, 300};
    // varblock's whole blocks with the exact posterior's proposal, after the warmup: overrelaxed
    // moves about that t (inference/block_mh.hpp) with this α in (-1, 1); 0: independence
    // proposals (docs/methods.md, "Overrelaxed block moves").
    double varblock_overrelax = -0.3;
    // NUTS's target mean acceptance statistic (Stan's adapt_delta), in (0, 1); 0: automatic,
    // nuts_adapt_delta below.
    double adapt_delta = 0;
    double init_inflation = 4.0;  // initial points: the variational fit with covariance ×4
    // After sampling, on a model whose posterior has equivalent labelings (lang/symmetry.hpp):
    // "pivot" relabels every draw to the labeling nearest a common pivot, "none" keeps the draws
    // as drawn (runtime/report/relabel.hpp; docs/methods.md, "Relabelling to a pivot"). Applied
    // by runtime/services/, not by fit() below: draws passed to callbacks are as drawn.
    std::string relabel = "pivot";
    int max_enumerated = 12;      // hidden/missing values summed together per row, at most
    // Each data row's log-likelihood at every kept draw, as log_lik.1 … log_lik.N beside the
    // parameters (services::CsvDrawFiles, the API's Chain::log_lik): what `vbn loo` reads.
    bool log_lik = false;
    // The data's rows sharded into `shards` slices (runtime/distributed/, `--shards`): the data
    // given to fit() are shard 0's rows, every evaluation of the log density sums all the
    // shards' terms through `sharded`, and the variational fit (the chains' initial points, and
    // the start of NUTS's Newton search for its metric) is sharded_variational's, over all the
    // shards. Only NUTS runs so.
    std::shared_ptr<const RemoteLikelihood> sharded;
    std::function<VbResult(const VbOptions&)> sharded_variational;
    // A variational fit already made with `vb` on these data (`vbn vb`'s, when its sampled
    // correction runs the chains): used as it is rather than fitted again, restarts and all.
    std::shared_ptr<const VbResult> variational;
    int shards = 1;
    inference::ChainCallbacks callbacks;
    // Called once the variational fit is done, before any chain starts (e.g. to write
    // output headers that record it), with the method that will run (auto resolved).
    std::function<void(const VbFit&, const std::string& method)> on_vb;
    // Called with each note of the preparation (auto's choice and why, the proposal) once the
    // kernel is built and before any chain starts, so that a long run says first what it
    // runs. FitResult::notes holds them too, followed by any later ones.
    std::function<void(const std::string&)> on_note;
};

// NUTS's target acceptance for this model and data: `requested` when it is not 0, else 0.65
// for a log-concave posterior (every binary node observed in every row: the priors are
// Gaussian and each observed logistic term is log-concave in the weights) with more than
// nuts_low_delta_above parameters, and Stan's 0.8 otherwise. Why: Stan's 0.8 buys robustness
// where a longer step can diverge, and such a posterior has none (its curvature is bounded: a
// logistic term's is at most 1/4 per unit of η); and as the dimension grows the most
// efficient acceptance falls towards 0.651 (Beskos et al. 2013). On unimodal_d50 0.65 gave
// 1.4x the bulk-ESS of 0.8 for the same work; on unimodal_d10 it would lose (docs/methods.md,
// "NUTS's target acceptance").
constexpr int nuts_low_delta_above = 20;
double nuts_adapt_delta(const ir::Graph& graph, const Dataset& data, double requested = 0);

struct FitResult {
    std::string method;                            // the resolved method (never "auto")
    std::string kernel;                            // the kernel's description
    double adapt_delta = 0;                        // NUTS's target acceptance (0: not NUTS)
    int threads = 1;                               // worker threads the run used (the summary uses as many)
    VbResult vb;
    std::vector<int> order;                        // output_order(graph)
    std::vector<std::string> names;                // reported values as users see them: w[1], W[2,3]
    std::vector<std::string> csv_names;            // the same with dotted indices: w.1, W.2.3
    std::vector<inference::ChainResult> chains;
    // Wall time of each phase of fit(): building the target (families, merged rows), the
    // variational fit, the proposals and kernel (Newton, pilot draws, mode search: everything
    // between the variational fit and the chains), and the chains' warmup and sampling (their
    // wall time split in the proportion the chains spent in each).
    double target_seconds = 0, vb_seconds = 0, proposal_seconds = 0, warmup_seconds = 0, sampling_seconds = 0;
    std::vector<std::string> notes;                // things the user should know (not errors)
    bool hidden = false;                           // the model has hidden nodes (several modes are likely)
    lang::Symmetries symmetries;                   // the model's exact symmetries, found once per fit
    std::string symmetry;                          // lang::describe_symmetries of the model, "" if none
    std::optional<std::uint64_t> labelings = 1;    // equivalent labelings; empty above 10^18
    // The flips and exchanges the symmetry jumps start from (lang/approximate_symmetry.hpp);
    // both empty when no jump ran.
    std::vector<lang::ApproximateFlip> approximate_flips;
    std::vector<lang::ApproximateSwap> approximate_swaps;
    bool symmetry_jumps() const { return !approximate_flips.empty() || !approximate_swaps.empty(); }
    // The exact labelings' generators the jumps also propose, where the exchanges involve nodes
    // the labelings move (runtime/sampling/symmetry_moves.hpp); else empty.
    std::vector<inference::SignedPermutation> exact_jump_moves;
    std::vector<std::string> exact_jump_names;
    // The target the chains ran on, kept where the symmetry jumps ran: the summary weighs the
    // flipped copies by importance sampling (runtime/report/mode_masses.hpp). Else null.
    std::shared_ptr<const Target> target;
};

// The order in which parameters are reported: the model's parameters in order of use, the
// elements of a matrix in column-major order as CmdStan writes them (rstan rebuilds shapes
// from it). Entry j is the index in θ of the j-th reported value.
std::vector<int> output_order(const ir::Graph& graph);

// Runs VB then the chains. Throws vbn::Error (usage for bad options, limit when exact
// summation would be exponential — except with `auto`, which then falls back to gibbs with
// a note — inference when every chain failed).
FitResult fit(const ir::Graph& graph, const Dataset& data, const FitOptions& options);
// The same, handed the data: their values are dropped (Dataset::drop_values) once nothing
// reads them, so that the rows are not held twice (the target keeps its own copy): as soon
// as the target has read them where the variational fit runs on its families (large data,
// or unobserved values), else once the fit beside the target is done. The draws are the same.
FitResult fit(const ir::Graph& graph, Dataset&& data, const FitOptions& options);

}  // namespace vbn
