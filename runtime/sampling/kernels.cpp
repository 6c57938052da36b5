#include "runtime/sampling/kernels.hpp"

#include "inference/block_mh.hpp"
#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/mixture_mh.hpp"
#include "inference/nuts.hpp"
#include "inference/psis.hpp"
#include "inference/random_walk.hpp"
#include "inference/regeneration.hpp"
#include "inference/warmup_walk.hpp"
#include "runtime/target/prior.hpp"
#include "runtime/sampling/gibbs.hpp"
#include "runtime/sampling/methods.hpp"
#include "runtime/sampling/pmc.hpp"
#include "runtime/sampling/tail_probe.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb_refine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace vbn {

namespace {
using inference::GaussianProposal;

GaussianProposal variational_proposal(const VbFit& q, double df, double inflation) {
    return q.proposal(df, inflation);
}

// gibbs: a sweep over the unobserved values, then each block of θ given them by independence
// MH from the Laplace approximation of its complete-data conditional (runtime/sampling/gibbs.hpp).
std::unique_ptr<inference::Kernel> make_gibbs_kernel(const VbFit& q, const FitOptions& o) {
    using namespace inference;
    std::vector<std::unique_ptr<Kernel>> parts;
    parts.push_back(std::make_unique<HiddenGibbs>());
    parts.push_back(std::make_unique<ConditionalLaplaceMH>(q.mean, o.proposal_df, 1.0));
    return std::make_unique<Cycle>(std::move(parts));
}

// Small models with unobserved values: VB is narrow and lands on one mode
// (docs/experiments-multimodal.md), so varmix and regen start from the modes of the exact
// posterior, found by Newton ascent from the VB mean and from prior draws. varmix proposes
// (independence MH, every move) from a t mixture fitted to the exact posterior by population
// Monte Carlo, starting from t's at the modes weighted by their Laplace masses, with the
// prior as a defensive component (runtime/sampling/pmc.hpp): it reaches the other modes and the tails
// in one move. regen starts from one t with the Laplace mixture's mean and covariance.
constexpr int mode_search_prior_starts = 16;
constexpr double mode_proposal_df = 4.0;         // heavy tails: the modes are often skewed
constexpr double mode_proposal_inflation = 2.0;  // Laplace covariances understate the spread

// "the 2 modes found by Newton from 17 starts"
std::string modes_found(const std::vector<PosteriorMode>& modes) {
    return fmt::format("the {} found by Newton from {} starts",
                       modes.size() == 1 ? std::string("mode") : fmt::format("{} modes", modes.size()),
                       mode_search_prior_starts + 1);
}

// The jumps between modes: a t mixture fitted to the exact posterior by population Monte Carlo
// from the modes' Laplace t's (runtime/sampling/pmc.hpp), with stream 3 of the seed.
std::unique_ptr<inference::Kernel> mode_mixture_kernel(const ir::Graph& graph, const Target& target,
                                                       const std::vector<PosteriorMode>& modes, const FitOptions& o,
                                                       std::vector<std::string>& notes) {
    if (modes.empty()) return nullptr;
    Eigen::VectorXd prior_mean;  // the mixture's defensive component
    Eigen::MatrixXd prior_cov;
    prior_gaussian(graph, prior_mean, prior_cov);
    inference::Rng rng(o.seed, 3);
    PmcOptions po;
    po.threads = o.threads;
    po.prior_df = heavy_prior_df(graph);
    PmcFit f = fit_pmc_mixture(target, modes, prior_mean, prior_cov, mode_proposal_df, mode_proposal_inflation, rng, po);
    notes.push_back(fmt::format("varmix: independence proposal from a mixture of {} t's and the prior, fitted to the exact "
                                "posterior by population Monte Carlo ({} round{}) from {}; importance ESS {:.0f}% of the "
                                "draws, k-hat {:.2f}",
                                f.proposal.size() - 1, f.rounds, f.rounds == 1 ? "" : "s", modes_found(modes),
                                100 * f.ess_fraction, f.pareto_k));
    return std::make_unique<inference::MixtureIndependenceMH>(std::move(f.proposal));
}

// One t₄ with the mean and covariance of the modes' Laplace mixture, covariance ×2.
GaussianProposal moment_matched_proposal(const std::vector<PosteriorMode>& modes) {
    const Eigen::Index d = modes.front().mode.size();
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
    Eigen::MatrixXd second = Eigen::MatrixXd::Zero(d, d);
    const std::vector<double> w = laplace_weights(modes);
    for (std::size_t k = 0; k < modes.size(); ++k) {
        mean += w[k] * modes[k].mode;
        second += w[k] * (modes[k].cov + modes[k].mode * modes[k].mode.transpose());
    }
    GaussianProposal p(mean, second - mean * mean.transpose(), mode_proposal_df);
    p.inflate(mode_proposal_inflation);
    return p;
}

// varblock: which nodes' blocks are moved in whitened sub-blocks (nothing when none is; a block
// whose exact proposal carries a triangular map is moved whole).
std::optional<std::string> split_note(const ir::Graph& graph, const inference::BlockSplit& split, const LaplaceProposal* exact) {
    std::string nodes;
    for (std::size_t i = 0; i < graph.blocks.size(); ++i) {
        const auto& b = graph.blocks[i];
        if (!split.splits(b.size) || (exact && i < exact->blocks.size() && !split.splits(exact->blocks[i]))) continue;
        nodes += fmt::format("{}{} ({} weights in {} sub-blocks)", nodes.empty() ? "" : ", ",
                             graph.elements[static_cast<std::size_t>(b.element)].name, b.size, split.parts(b.size));
    }
    if (nodes.empty()) return std::nullopt;
    return fmt::format("varblock: nodes with more than {} weights move in {}: {}", split.above, split.describe(), nodes);
}

// NUTS starts from the exact posterior's Laplace fit (the mode by Newton from the VB mean and
// the inverse Hessian there, runtime/variational/vb_refine.hpp) as its metric, when the model has at most
// FitOptions::laplace.max_dim parameters and Newton reaches a mode: the Jaakkola–Jordan
// covariance is too narrow and, at 50 weights, off-centre. Each warmup window's covariance
// estimate is shrunk towards that initial metric with nuts_laplace_pseudo_draws × d
// pseudo-draws (× 1 for the VB covariance, a poorer guess) rather than towards 1e-3 I: a first
// window of 25 draws cannot estimate a 50 × 50 covariance, and Stan's shrinkage then left
// trajectories of 100-170 leapfrog steps for the next 150 iterations, 60% of the warmup's
// gradients on unimodal_d50. The sampling phase's kernel is fixed as before. Above
// max_dense_dim the metric is diagonal, started from the VB variances and shrunk as Stan does:
// per-coordinate variances need no help from a guess.
// With that shrinkage the windows before the last (25-200 draws against 10 d pseudo-draws)
// move the metric 5-29% of the way to their estimate at d = 50 (20-67% at d = 10), so the
// step size learnt so far still fits: dual averaging carries on across them and restarts, with Stan's step
// size search, only before the terminal buffer (NutsOptions::restart_stepsize_each_window
// false), which so fixes the sampling phase's step size as Stan does. Each of Stan's four
// earlier restarts started from 10 ε at near-zero acceptance and then over-corrected to
// trajectories of 31-63 steps; carrying on cut warmup's leapfrog steps by 8-12% on the
// unimodal examples with 10-50 parents (docs/methods.md).
// That weight is for a posterior the Laplace fit describes closely: every node observed, each
// block a Bayesian logistic regression (log-concave). Where values are summed out the posterior is
// a mixture over them, skewed and curved where a hidden node's weights are weakly identified,
// and the mode's curvature is a poorer guess of its covariance: there the weight is 1 × d, so
// that the windows' estimates outweigh the guess from the 50-draw window on. On
// tests/corpus/sbn2 (41 weights; hidden values in two layers) at seeds 1-4 the smallest
// min(bulk, tail) ESS of the checked quantities went from 367, 373, 244, 494 to 460, 710, 611,
// 682 (tests/corpus/check.py, 20% more time); on the other NUTS models of the corpus
// (diagnosis, survey, occupancy, housevotes, sbn_3x8, chain_hmm, responder_trial) ESS per
// second moved by -8% to +6% on average over seeds 1-3. The windows before the last then move
// the metric further (38-83% of the way at 41 weights), yet dual averaging is still carried
// across them: restarting it after each window as Stan does left sbn2's ESS at seeds 1-4 at
// 419, 778, 197 and 562 (seed 3 failing the corpus's check) against 460, 710, 611 and 682,
// in more time.
constexpr double nuts_laplace_pseudo_draws = 10;  // per parameter; 1 (= d) and 4 left longer
                                                  // trees after warmup on unimodal_d50
constexpr double nuts_laplace_pseudo_draws_summed = 1;  // ... where values are summed out
std::unique_ptr<inference::Kernel> make_nuts_kernel(const VbFit& q, const FitOptions& o, const ir::Graph& graph,
                                                    const Target& target, double adapt_delta, bool summed_out) {
    using namespace inference;
    const int d = graph.dim;
    NutsOptions no;
    no.dual_averaging.delta = adapt_delta;
    if (!nuts_dense_metric(d)) return std::make_unique<NutsKernel>(EuclideanMetric::diagonal(q.variances()), no);
    if (d <= o.laplace.max_dim) {
        NewtonMode m = posterior_mode(target, q.mean);
        if (m.converged) {
            no.initial_metric_weight = (summed_out ? nuts_laplace_pseudo_draws_summed : nuts_laplace_pseudo_draws) * d;
            no.restart_stepsize_each_window = false;
            return std::make_unique<NutsKernel>(EuclideanMetric::dense(m.cov), no);
        }
    }
    no.initial_metric_weight = d;
    return std::make_unique<NutsKernel>(EuclideanMetric::dense(q.dense_cov()), no);
}

// varblock's proposals from the exact posterior (only these may be re-centred in warmup; the
// variational proposal, where summed-out values couple blocks or with --proposal vb, stays as
// the paper's VarMCMC uses it): each whole block whose pilot kept the Laplace
// fit (as is or re-centred; re-fits have heavier refit_df tails and keep them) becomes a t with
// FitOptions::varblock_df degrees of freedom. In 20 dimensions the radius of a t(30) spreads
// wider than the posterior's: on unimodal_d20, with the centre and scale matrix of a long run,
// a Gaussian accepted 91% of its proposals and a t(30) 81%; t(100) keeps tails heavier than
// the Gaussian's (a Gaussian proposal's chains stuck now and then: min bulk-ESS 1,500 of 4,000
// on two of six seeds).
//
// Each block's overrelaxation (inference/block_mh.hpp): FitOptions::varblock_overrelax for the
// whole blocks that propose from the t(varblock_df) and whose pilot found that fit good (k̂ at
// most laplace.good_k, importance ESS at least laplace.good_ess), 0 for the rest: the
// antithetic gain needs the proposal close to the posterior, and a proposal much wider than
// the posterior mixes the chain's spread slowly when overrelaxed.
struct VarblockProposals {
    std::vector<inference::GaussianProposal> blocks;  // one per target block
    std::vector<double> overrelax;                    // α per block (0: independence proposals)
    int whole = 0;                                    // blocks moved whole, not in whitened sub-blocks
    int whole_t = 0;                                  // of these, the ones proposing from the t(varblock_df)
    std::vector<char> walk;                           // per block: whole, flagged by the tail probe (refit_df at
                                                      // most), so a random walk moves it as well
    // Which whole blocks are re-centred in warmup (FitOptions::varblock_recentre), one flag per
    // block: those that kept a centre estimated from draws. A centre moved to the mean's next
    // Laplace term (LaplaceProposal::mean_shifted) has no sampling noise for the chain's own
    // draws to average out, and re-centring on them adds theirs (on unimodal_d20, seeds 1-8:
    // acceptance 87% re-centred, 90% not; min bulk-ESS 4,280 and 4,800). Blocks moved in
    // sub-blocks are never flagged here (BlockSplit re-centres those).
    std::vector<char> recentre;
    bool any_recentre() const { return std::find(recentre.begin(), recentre.end(), 1) != recentre.end(); }
};

// Draws from each whole t block for its tail probe: with the probe's 4 d points, about as many
// block evaluations as the pilot's first round takes at 2 weights (500 draws), fewer above.
constexpr int tail_probe_draws = 64;

// Stream 5 of the seed: apart from the inits, mode search, pilots and variational k̂ (1-4).
constexpr std::uint64_t tail_probe_stream = 5;

// A whole block's t as varblock proposes from it: t(varblock_df) in place of the Laplace fit's
// t(laplace.df); a pilot's re-fit as it is.
void set_varblock_df(inference::GaussianProposal& q, const FitOptions& o) {
    if (o.varblock_df > 0 && q.df() == o.laplace.df) q.set_df(o.varblock_df);
}

// Whole blocks whose t (varblock_df, or a pilot's re-fit) the tail probe finds lighter-tailed
// than their posterior (runtime/sampling/tail_probe.hpp) take at most laplace.refit_df degrees
// of freedom, are not overrelaxed, and are moved by a block random walk after their block move
// in every iteration (the paper's mixture of §4.3, as a cycle): independence moves alone are
// not geometrically ergodic where p/q is unbounded, and a t's polynomial tails bound it only
// far out, where the posterior's tail is its prior's, several times wider than the Laplace fit.
// Checked against Stan on models kept out of this choice (docs/methods.md, "Tails the t
// misses"): on 40 logistic regressions of 6 binary parents with 30 rows, independence moves
// from t(100) gave min ESS 4 (R-hat 1.55) on three seeds of three, t(5) with the warmup walk
// of with_walks alone min ESS 5 on one seed of three, and with the walk as well at least 395;
// on 70 regressions of 3 real covariates with 2,000 rows the probe flags no block.
VarblockProposals varblock_proposals(const LaplaceProposal& exact, const std::vector<char>& tails, const FitOptions& o) {
    VarblockProposals out;
    out.blocks = exact.blocks;
    out.overrelax.assign(exact.blocks.size(), 0.0);
    out.recentre.assign(exact.blocks.size(), 0);
    out.walk.assign(exact.blocks.size(), 0);
    for (std::size_t b = 0; b < out.blocks.size(); ++b) {
        inference::GaussianProposal& q = out.blocks[b];
        if (o.varblock_split.splits(q)) continue;
        ++out.whole;
        if (o.varblock_recentre.enabled && !(b < exact.mean_shifted.size() && exact.mean_shifted[b])) out.recentre[b] = 1;
        set_varblock_df(q, o);
        if (tails[b]) {
            if (q.df() > o.laplace.refit_df) q.set_df(o.laplace.refit_df);
            out.walk[b] = 1;
            continue;
        }
        if (o.varblock_df <= 0 || q.df() != o.varblock_df) continue;
        ++out.whole_t;
        if (exact.pareto_k[b] <= o.laplace.good_k && exact.ess[b] >= o.laplace.good_ess) out.overrelax[b] = o.varblock_overrelax;
    }
    return out;
}

}  // namespace

std::vector<char> varblock_tail_flags(const Target& target, const LaplaceProposal& exact, const FitOptions& o) {
    std::vector<char> flags(exact.blocks.size(), 0);
    inference::Rng rng(o.seed, tail_probe_stream);
    Target::Workspace ws = target.make_workspace();
    Eigen::VectorXd theta = Eigen::VectorXd::Zero(target.dim());
    for (std::size_t b = 0; b < exact.blocks.size(); ++b) {
        inference::GaussianProposal q = exact.blocks[b];
        if (o.varblock_split.splits(q)) continue;
        set_varblock_df(q, o);
        flags[b] = probe_tails(target, static_cast<int>(b), q, theta, ws, rng, tail_probe_draws).light();
    }
    return flags;
}

namespace {

// varblock with the exact posterior's proposal: what its whole blocks do (nothing when it has none).
std::optional<std::string> whole_block_note(const VarblockProposals& v, const FitOptions& o) {
    if (v.whole == 0) return std::nullopt;
    std::string out = v.whole_t == 0 ? std::string("varblock: whole blocks propose from the pilot's t")
                                     : fmt::format("varblock: whole blocks ({} of {}) propose from that t with {} degrees of freedom",
                                                   v.whole_t, v.whole, o.varblock_df);
    if (const auto heavier = std::count(v.walk.begin(), v.walk.end(), 1); heavier > 0)
        out += fmt::format("; {} whose posterior's tails reach past their t (probed beyond its draws) with at most {} "
                           "and a random walk after each block move",
                           heavier, o.laplace.refit_df);
    if (v.any_recentre()) {
        const auto n = std::count(v.recentre.begin(), v.recentre.end(), 1);
        out += ", " + (n == v.whole ? std::string() : fmt::format("{} of them ", n)) + o.varblock_recentre.describe();
    }
    const auto overrelaxed = std::count_if(v.overrelax.begin(), v.overrelax.end(), [](double a) { return a != 0; });
    if (overrelaxed > 0)
        out += fmt::format("; after warmup {} of them move by overrelaxed proposals (alpha {})", overrelaxed, o.varblock_overrelax);
    return out;
}

// The block moves of varmix: from the exact posterior's proposal when there is one, else from
// the variational marginals.
std::unique_ptr<inference::BlockIndependenceMH> block_moves(const KernelInputs& in) {
    const FitOptions& o = in.options;
    return in.exact ? std::make_unique<inference::BlockIndependenceMH>(in.exact->blocks)
                    : std::make_unique<inference::BlockIndependenceMH>(variational_proposal(in.q, o.proposal_df, o.proposal_inflation));
}

// A kernel that comes with no notes.
KernelBuild kernel_alone(std::unique_ptr<inference::Kernel> kernel) {
    KernelBuild out;
    out.kernel = std::move(kernel);
    return out;
}

}  // namespace

double variational_proposal_k(const Target& target, const VbFit& q, const FitOptions& o, int draws) {
    GaussianProposal proposal = variational_proposal(q, o.proposal_df, o.proposal_inflation);
    inference::Rng rng(o.seed, 4);
    Target::Workspace ws = target.make_workspace();
    Eigen::VectorXd theta(target.dim()), log_ratio(draws);
    for (int i = 0; i < draws; ++i) {
        proposal.sample(rng, theta);
        const double lp = target.log_density(theta, ws);
        log_ratio[i] = std::isfinite(lp) ? lp - proposal.log_density(theta) : -std::numeric_limits<double>::infinity();
    }
    return inference::pareto_k(log_ratio);
}

std::vector<PosteriorMode> search_modes(const ir::Graph& graph, const Target& target, const VbFit& q, const FitOptions& o) {
    std::vector<Eigen::VectorXd> starts{q.mean};
    inference::Rng rng(o.seed, 2);  // stream 2 of the seed: apart from the inits and chains
    for (int k = 0; k < mode_search_prior_starts; ++k) starts.push_back(draw_prior(graph, rng));
    return find_posterior_modes(target, starts);
}


KernelBuild build_rwm_kernel(const KernelInputs& in) {
    inference::RandomWalkOptions ro;
    ro.mode = inference::BlockMode::whole;
    return kernel_alone(std::make_unique<inference::RandomWalk>(in.q.covs, ro));
}

KernelBuild build_varmh_kernel(const KernelInputs& in) {
    const FitOptions& o = in.options;
    return kernel_alone(std::make_unique<inference::IndependenceMH>(
        in.exact ? in.exact->joint() : variational_proposal(in.q, o.proposal_df, o.proposal_inflation)));
}

// The block moves with two random walks, each a block random walk shaped by the blocks'
// proposal scale matrices:
// - in the first tenth of warmup, one over the blocks that the last block moves left in place
//   (inference::WarmupWalk). A chain started in a posterior tail that the t proposal misses
//   stays there under independence moves alone: on 90 two-weight logistic regressions with 40
//   rows, where some children's counts leave a cell empty, one chain of four started 8-10 sds
//   out never moved, on 4 of 5 seeds (R-hat 1.53 there; NUTS and varmix 1.00-1.02), also where
//   the tail probe below finds the t fits to 6 sds (a logistic posterior's log density falls
//   linearly far out, a t(100)'s quadratically to about 10 scale units);
// - in the sampling phase, one over the blocks flagged in `walk` (one flag per block, or
//   empty), after the block moves (varblock_proposals says which and why).
// tests/runtime/test_many_blocks_grid.cpp checks such a model against each block's grid.
std::unique_ptr<inference::Kernel> with_walks(std::unique_ptr<inference::Kernel> blocks, const std::vector<Eigen::MatrixXd>& covs,
                                              std::vector<char> walk) {
    inference::RandomWalkOptions ro;
    ro.mode = inference::BlockMode::per_block;
    if (std::find(walk.begin(), walk.end(), 1) != walk.end()) {
        inference::RandomWalkOptions only = ro;
        only.only = std::move(walk);
        std::vector<std::unique_ptr<inference::Kernel>> parts;
        parts.push_back(std::move(blocks));
        parts.push_back(std::make_unique<inference::RandomWalk>(covs, only));
        blocks = std::make_unique<inference::Cycle>(std::move(parts));
    }
    return std::make_unique<inference::WarmupWalk>(std::move(blocks), inference::RandomWalk(covs, ro));
}

// Its notes say which nodes move in whitened sub-blocks and what the whole blocks do.
KernelBuild build_varblock_kernel(const KernelInputs& in) {
    const FitOptions& o = in.options;
    KernelBuild out;
    if (auto note = split_note(in.graph, o.varblock_split, in.exact)) out.notes.push_back(std::move(*note));
    if (!in.exact) {
        out.kernel = std::make_unique<inference::BlockIndependenceMH>(
            variational_proposal(in.q, o.proposal_df, o.proposal_inflation), o.varblock_split);
        return out;
    }
    std::vector<char> found;
    const std::vector<char>& tails = in.tails ? *in.tails : (found = varblock_tail_flags(in.target, *in.exact, o));
    VarblockProposals v = varblock_proposals(*in.exact, tails, o);
    if (auto note = whole_block_note(v, o)) out.notes.push_back(std::move(*note));
    std::vector<Eigen::MatrixXd> covs;
    for (const auto& q : v.blocks) covs.push_back(q.scale_matrix());
    inference::BlockRecentre recentre = o.varblock_recentre;
    recentre.enabled = v.any_recentre();
    recentre.blocks = std::move(v.recentre);
    out.kernel = with_walks(std::make_unique<inference::BlockIndependenceMH>(std::move(v.blocks), o.varblock_split,
                                                                             recentre, std::move(v.overrelax)),
                            covs, std::move(v.walk));
    return out;
}

// Fully observed, the posterior is a product of logistic regressions that the variational
// block marginals fit closely: the original mixture is better there. With unobserved values
// in a small model: the modes' mixture, unless no mode was found.
KernelBuild build_varmix_kernel(const KernelInputs& in) {
    KernelBuild out;
    inference::RandomWalkOptions ro;
    ro.mode = inference::BlockMode::per_block;
    out.kernel = mode_mixture_kernel(in.graph, in.target, in.modes, in.options, out.notes);
    if (!out.kernel)
        out.kernel = std::make_unique<inference::Mixture>(in.options.mixture_nu, block_moves(in),
                                                          std::make_unique<inference::RandomWalk>(in.q.covs, ro));
    return out;
}

// The same modes' mixture, matched by one t's mean and covariance, as the starting proposal:
// far wider than VB, so the first tours cover every mode it found.
KernelBuild build_regen_kernel(const KernelInputs& in) {
    const FitOptions& o = in.options;
    inference::RegenerationOptions ro;
    KernelBuild out;
    if (!in.modes.empty()) {
        out.notes.push_back(fmt::format("regen: starting proposal t({:g}) with the mean and covariance (x {:g}) of the "
                                        "Laplace fits at {}",
                                        mode_proposal_df, mode_proposal_inflation, modes_found(in.modes)));
        out.kernel = std::make_unique<inference::RegenerationKernel>(moment_matched_proposal(in.modes), ro);
        return out;
    }
    out.kernel = std::make_unique<inference::RegenerationKernel>(
        in.exact ? in.exact->joint() : variational_proposal(in.q, o.proposal_df, o.proposal_inflation), ro);
    return out;
}

// Its target acceptance by nuts_adapt_delta, with a note where it is not Stan's 0.8.
KernelBuild build_nuts_kernel(const KernelInputs& in) {
    const FitOptions& o = in.options;
    KernelBuild out;
    out.adapt_delta = nuts_adapt_delta(in.graph, in.data, o.adapt_delta);
    if (o.adapt_delta == 0 && out.adapt_delta != 0.8)
        out.notes.push_back(fmt::format("nuts: target acceptance {} (log-concave posterior: every node observed, {} "
                                        "parameters); --adapt-delta sets it",
                                        out.adapt_delta, in.graph.dim));
    out.kernel = make_nuts_kernel(in.q, o, in.graph, in.target, out.adapt_delta, has_unobserved_values(in.graph, in.data));
    return out;
}

KernelBuild build_gibbs_kernel(const KernelInputs& in) { return kernel_alone(make_gibbs_kernel(in.q, in.options)); }

}  // namespace vbn
