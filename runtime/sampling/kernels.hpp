// How each method's kernel is built (the `build` column of runtime/sampling/methods.hpp), from
// what fit() prepared before it: the compiled target, the variational fit, the exact
// posterior's proposal and modes (variational-mcmc.txt §4; docs/methods.md, `vbn fit --method`).
//
// Method presets (docs/design.md §3), all started from points dispersed around the variational fit:
//   rwm       random-walk Metropolis on all parameters, steps shaped by the variational
//             covariance, scale tuned in warmup
//   varmh     independence MH with one proposal for all of θ (§4.1)
//   varblock  block MH, each block proposed from its own proposal (§4.2, Fig. 6); blocks of
//             more than 20 weights whose proposal has no triangular map (21-64 weights where
//             every value is observed: LaplaceProposalOptions::skew_map) in whitened sub-blocks
//             (FitOptions::varblock_split), the
//             others from a t(100) at the mode plus its skewness correction where every value
//             is observed, else re-centred in warmup (FitOptions::varblock_df, varblock_recentre)
//             and, after the warmup, by overrelaxed moves about it (FitOptions::varblock_overrelax)
//             (the proposals of varmh, varblock, varmix's block moves and regen's start come
//             from the exact posterior's Laplace fit, runtime/sampling/laplace_proposal.hpp, where the
//             blocks are separable; else, or with FitOptions::proposal "vb", from the
//             variational fit with Student-t tails and a widened covariance)
//   varmix    mixture of varblock and a block random walk (§4.3, Fig. 7); with hidden or
//             missing values and at most 10 weights, independence moves from a t mixture at
//             the exact posterior's modes take varblock's place (docs/methods.md, "Mode jumps")
//   regen     adaptive independence MH through regeneration (§4.4, Fig. 9–10); with hidden or
//             missing values and at most 10 weights it starts from the modes, not VB
//   nuts      NUTS with Stan's adaptation, the variational covariance as initial metric
//   gibbs     the unobserved values sampled with θ (runtime/sampling/gibbs.hpp): a Gibbs sweep over
//             them cycled with a Laplace-proposal block MH move on θ given the completed
//             data; no limit on the unobserved values per row. lp__ is then the complete-data
//             log joint.
//   auto      the default; see choose_method() (runtime/sampling/methods.hpp)
#pragma once

#include "inference/chains.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/sampling/laplace_proposal.hpp"
#include "runtime/sampling/posterior_modes.hpp"

#include <memory>
#include <string>
#include <vector>

namespace vbn {

class Target;

// The modes of the exact posterior, by Newton from the VB mean and from prior draws (stream 2
// of the seed); empty when none was found.
std::vector<PosteriorMode> search_modes(const ir::Graph& graph, const Target& target, const VbFit& q, const FitOptions& o);

// The pilot check of the variational independence proposal (the t that varmix's block moves
// draw from: the fit's block covariances, proposal_df and proposal_inflation) against the
// exact posterior: the PSIS k̂ of the importance ratios p(θ | x) / q(θ) over `draws` draws
// (stream 4 of the seed). Above 0.7 the ratios have too heavy a tail for importance or
// independence moves built on q to be reliable (Vehtari et al., Pareto smoothed importance
// sampling, 2024, §3): chains proposing from it stick.
constexpr int variational_pilot_draws = 1000;
double variational_proposal_k(const Target& target, const VbFit& q, const FitOptions& o,
                              int draws = variational_pilot_draws);

// varblock's tail check of the exact proposal (runtime/sampling/tail_probe.hpp, stream 5 of the
// seed): per block, 1 where the block moves whole and the tail probe finds the t it will
// propose from (t(varblock_df) in place of the Laplace fit's t, else the pilot's) lighter-tailed
// than the block's posterior. varblock gives such a block heavier tails and a random walk;
// fit() takes NUTS over varblock by `auto` where one has more than two weights.
std::vector<char> varblock_tail_flags(const Target& target, const LaplaceProposal& exact, const FitOptions& o);

struct KernelInputs {
    const ir::Graph& graph;
    const Dataset& data;
    const Target& target;
    const VbFit& q;
    const FitOptions& options;
    const std::vector<PosteriorMode>& modes;  // where the method searches modes (empty when none was found), else empty
    const LaplaceProposal* exact;             // the exact posterior's proposal (independence_proposal), or null
    const std::vector<char>* tails = nullptr; // varblock_tail_flags of exact, where fit() has them (else found here)
};

struct KernelBuild {
    std::unique_ptr<inference::Kernel> kernel;
    std::vector<std::string> notes;  // what the user should know about it, in order
    double adapt_delta = 0;          // NUTS's target acceptance (0: not NUTS)
};

KernelBuild build_rwm_kernel(const KernelInputs& in);
KernelBuild build_varmh_kernel(const KernelInputs& in);
KernelBuild build_varblock_kernel(const KernelInputs& in);
KernelBuild build_varmix_kernel(const KernelInputs& in);
KernelBuild build_regen_kernel(const KernelInputs& in);
KernelBuild build_nuts_kernel(const KernelInputs& in);
KernelBuild build_gibbs_kernel(const KernelInputs& in);

}  // namespace vbn
