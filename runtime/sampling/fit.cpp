#include "runtime/sampling/fit.hpp"

#include "inference/block_mh.hpp"
#include "inference/clock.hpp"
#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/mixture_mh.hpp"
#include "inference/nuts.hpp"
#include "inference/parallel.hpp"
#include "inference/random_walk.hpp"
#include "inference/regeneration.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/gibbs.hpp"
#include "runtime/sampling/pmc.hpp"
#include "runtime/sampling/posterior_modes.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb_refine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>

namespace vbn {

const std::vector<std::string>& method_names() {
    static const std::vector<std::string> names{"auto", "rwm", "varmh", "varblock", "varmix", "regen", "nuts", "gibbs"};
    return names;
}

namespace {
// Models with unobserved values and at most this many weights get the search for the exact
// posterior's modes (varmix and regen below; the reason `auto` picks varmix for them).
constexpr int mode_search_max_dim = 10;

// Hidden nodes, or observed binary nodes with missing entries.
bool has_unobserved_values(const ir::Graph& graph, const Dataset& data) {
    bool unobserved = false;
    for (std::size_t e = 0; e < graph.elements.size(); ++e) {
        const ir::Element& el = graph.elements[e];
        if (!el.binary) continue;
        if (el.hidden) unobserved = true;
        else if (data.column_of[e] >= 0 && data.missing[static_cast<std::size_t>(data.column_of[e])] > 0) unobserved = true;
    }
    return unobserved;
}
}  // namespace

double nuts_adapt_delta(const ir::Graph& graph, const Dataset& data, double requested) {
    if (requested != 0) {
        if (!(requested > 0 && requested < 1))
            throw Error(ErrorKind::usage, fmt::format("--adapt-delta must lie strictly between 0 and 1, got {}", requested));
        return requested;
    }
    return graph.dim > nuts_low_delta_above && !has_unobserved_values(graph, data) ? 0.65 : 0.8;
}

// By the figures of bench/speed_table and the grid and SBC checks (docs/methods.md,
// "Choosing a method"; docs/experiments-multimodal.md). Every node observed: the posterior
// factorises over blocks, each a Bayesian logistic regression that a t at its mode with the
// Laplace covariance fits closely (runtime/sampling/laplace_proposal.hpp), and block independence MH
// beats NUTS per second (2-6x at 10-20 weights). A plain t for a whole block of 50 weights
// sticks (its importance weights vary too much: ESS 17 of 4,000), and varblock's whitened
// sub-blocks (FitOptions::varblock_split) reach only 0.9-1.0x NUTS's bulk-ESS per second there;
// but skewed by the triangular map of the block's third derivatives (21-64 weights,
// LaplaceProposalOptions::skew_map) the whole block moves at twice NUTS's bulk-ESS per second on
// unimodal_d50 (docs/methods.md, "The triangular map"). Larger blocks keep NUTS. Hidden or missing values in a
// small model: the posterior can have several modes (a hidden cause's sign flipped) that VB
// and NUTS miss (SBC fails for nuts there), and varmix jumps between the exact posterior's
// modes. Larger models with unobserved values: varmix's variational block moves mixed with a
// random walk.
std::string choose_method(const ir::Graph& graph, const Dataset& data, std::string* why) {
    const bool unobserved = has_unobserved_values(graph, data);
    int largest_block = 0;
    for (const auto& b : graph.blocks) largest_block = std::max(largest_block, b.size);
    // varblock ahead of nuts up to here: blocks of 21-64 weights are skewed by the triangular map
    // and moved whole (50 weights: twice NUTS's bulk-ESS per second on unimodal_d50)
    constexpr int max_independence_block = inference::TriangularMap::max_dim;
    if (!unobserved) {
        if (largest_block <= max_independence_block) {
            if (why)
                *why = fmt::format("every node is observed and no node has more than {} weights: block "
                                   "independence proposals from the exact posterior's Laplace fit",
                                   max_independence_block);
            return "varblock";
        }
        if (why)
            *why = fmt::format("a node has {} weights, more than the {} one skewed independence proposal takes "
                               "(varblock's whitened sub-blocks are slower there): NUTS",
                               largest_block, max_independence_block);
        return "nuts";
    }
    if (why)
        *why = graph.dim <= mode_search_max_dim
                   ? "hidden or missing values in a small model: varmix searches the exact posterior's modes and jumps "
                     "between them"
                   : "hidden or missing values couple blocks: variational block moves mixed with a random walk";
    return "varmix";
}

std::vector<int> output_order(const ir::Graph& graph) {
    std::vector<int> order;
    for (const auto& p : graph.parameters) {
        if (p.shape.size() == 2) {
            const int rows = p.shape[0], cols = p.shape[1];
            for (int c = 0; c < cols; ++c)
                for (int r = 0; r < rows; ++r) order.push_back(p.theta_index[static_cast<std::size_t>(r * cols + c)]);
        } else {
            order.insert(order.end(), p.theta_index.begin(), p.theta_index.end());
        }
    }
    return order;
}

std::unique_ptr<Target> make_target(const ir::Graph& graph, const Dataset& data, int max_enumerated) {
    TargetOptions topt;
    topt.max_enumerated = max_enumerated;
    return std::make_unique<Target>(graph, data, topt);
}

std::unique_ptr<Target> make_complete_data_target(const ir::Graph& graph, const Dataset& data) {
    TargetOptions topt;
    topt.sum_out = false;
    return std::make_unique<Target>(graph, data, topt);
}

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

// varmix and regen on a small model with unobserved values take their proposal from the exact
// posterior's modes; the Laplace proposal at one mode is only their fallback when none is found.
bool searches_modes(const std::string& method, const ir::Graph& graph, bool unobserved) {
    return (method == "varmix" || method == "regen") && unobserved && graph.dim <= mode_search_max_dim;
}

std::vector<PosteriorMode> search_modes(const ir::Graph& graph, const Target& target, const VbFit& q, const FitOptions& o) {
    std::vector<Eigen::VectorXd> starts{q.mean};
    inference::Rng rng(o.seed, 2);  // stream 2 of the seed: apart from the inits and chains
    for (int k = 0; k < mode_search_prior_starts; ++k) starts.push_back(draw_prior(graph, rng));
    return find_posterior_modes(target, starts);
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

// The independence kernels' proposal from the exact posterior (FitOptions::proposal), with a
// note saying which proposal they use.
bool uses_exact_proposal(const std::string& method, const FitOptions& o) {
    return o.proposal == "laplace" && (method == "varmh" || method == "varblock" || method == "varmix" || method == "regen");
}

LaplaceProposalOptions laplace_options(const FitOptions& o) {
    LaplaceProposalOptions lo = o.laplace;
    lo.seed = o.seed;
    lo.threads = o.threads;
    return lo;
}

// The exact posterior's proposal for the independence kernels: `early` where it was built
// beside the variational fit, else by Newton from the VB mean.
std::optional<LaplaceProposal> exact_proposal(const std::string& method, const Target& target, const VbFit& q,
                                              const FitOptions& o, std::optional<LaplaceProposal> early,
                                              std::vector<std::string>& notes) {
    if (!uses_exact_proposal(method, o)) return std::nullopt;
    const LaplaceProposalOptions lo = laplace_options(o);
    std::string why_not;
    std::optional<LaplaceProposal> p = early ? std::move(early) : laplace_proposal(target, q, lo, &why_not);
    notes.push_back(p ? p->describe(lo) : fmt::format("independence proposal: the variational fit ({})", why_not));
    // varblock's split blocks are not proposed whole, so their pilot k̂ says nothing about them.
    double k = 0;
    if (p) {
        for (std::size_t b = 0; b < p->blocks.size(); ++b)
            if (method != "varblock" || !o.varblock_split.splits(p->blocks[b])) k = std::max(k, p->pareto_k[b]);
    }
    if (p && !(k <= 0.7))
        notes.push_back(fmt::format("the independence proposal fits the posterior poorly (pilot k-hat {:.2f} > 0.7): "
                                    "expect sticky chains; --method nuts or rwm may mix better",
                                    k));
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
constexpr double nuts_laplace_pseudo_draws = 10;  // per parameter; 1 (= d) and 4 left longer
                                                  // trees after warmup on unimodal_d50
std::unique_ptr<inference::Kernel> make_nuts_kernel(const VbFit& q, const FitOptions& o, const ir::Graph& graph,
                                                    const Target& target, double adapt_delta) {
    using namespace inference;
    const int d = graph.dim;
    NutsOptions no;
    no.dual_averaging.delta = adapt_delta;
    if (!nuts_dense_metric(d)) return std::make_unique<NutsKernel>(EuclideanMetric::diagonal(q.variances()), no);
    if (d <= o.laplace.max_dim) {
        NewtonMode m = posterior_mode(target, q.mean);
        if (m.converged) {
            no.initial_metric_weight = nuts_laplace_pseudo_draws * d;
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
    // Which whole blocks are re-centred in warmup (FitOptions::varblock_recentre), one flag per
    // block: those that kept a centre estimated from draws. A centre moved to the mean's next
    // Laplace term (LaplaceProposal::mean_shifted) has no sampling noise for the chain's own
    // draws to average out, and re-centring on them adds theirs (on unimodal_d20, seeds 1-8:
    // acceptance 87% re-centred, 90% not; min bulk-ESS 4,280 and 4,800). Blocks moved in
    // sub-blocks are never flagged here (BlockSplit re-centres those).
    std::vector<char> recentre;
    bool any_recentre() const { return std::find(recentre.begin(), recentre.end(), 1) != recentre.end(); }
};

VarblockProposals varblock_proposals(const LaplaceProposal& exact, const FitOptions& o) {
    VarblockProposals out;
    out.blocks = exact.blocks;
    out.overrelax.assign(exact.blocks.size(), 0.0);
    out.recentre.assign(exact.blocks.size(), 0);
    for (std::size_t b = 0; b < out.blocks.size(); ++b) {
        inference::GaussianProposal& q = out.blocks[b];
        if (o.varblock_split.splits(q)) continue;
        ++out.whole;
        if (o.varblock_recentre.enabled && !(b < exact.mean_shifted.size() && exact.mean_shifted[b])) out.recentre[b] = 1;
        if (o.varblock_df <= 0) continue;
        if (q.df() == o.laplace.df) q.set_df(o.varblock_df);
        if (q.df() != o.varblock_df) continue;
        ++out.whole_t;
        if (exact.pareto_k[b] <= o.laplace.good_k && exact.ess[b] >= o.laplace.good_ess) out.overrelax[b] = o.varblock_overrelax;
    }
    return out;
}

// varblock with the exact posterior's proposal: what its whole blocks do (nothing when it has none).
std::optional<std::string> whole_block_note(const LaplaceProposal& exact, const FitOptions& o) {
    const VarblockProposals v = varblock_proposals(exact, o);
    if (v.whole == 0) return std::nullopt;
    std::string out = v.whole_t == 0 ? std::string("varblock: whole blocks propose from the pilot's t")
                                     : fmt::format("varblock: whole blocks ({} of {}) propose from that t with {} degrees of freedom",
                                                   v.whole_t, v.whole, o.varblock_df);
    if (v.any_recentre()) {
        const auto n = std::count(v.recentre.begin(), v.recentre.end(), 1);
        out += ", " + (n == v.whole ? std::string() : fmt::format("{} of them ", n)) + o.varblock_recentre.describe();
    }
    const auto overrelaxed = std::count_if(v.overrelax.begin(), v.overrelax.end(), [](double a) { return a != 0; });
    if (overrelaxed > 0)
        out += fmt::format("; after warmup {} of them move by overrelaxed proposals (alpha {})", overrelaxed, o.varblock_overrelax);
    return out;
}

// modes: those of the exact posterior where searches_modes (empty when none was found), else empty.
std::unique_ptr<inference::Kernel> build_kernel(const std::string& method, const VbFit& q, const FitOptions& o,
                                                const ir::Graph& graph, const Target& target,
                                                const std::vector<PosteriorMode>& modes, const LaplaceProposal* exact,
                                                double adapt_delta, std::vector<std::string>& notes) {
    using namespace inference;
    if (method == "rwm") {
        RandomWalkOptions ro;
        ro.mode = BlockMode::whole;
        return std::make_unique<RandomWalk>(q.covs, ro);
    }
    // The block moves of varblock and varmix: from the exact posterior's proposal when there
    // is one, else from the variational marginals.
    auto block_moves = [&](BlockSplit split = {}) {
        return exact ? std::make_unique<BlockIndependenceMH>(exact->blocks, split)
                     : std::make_unique<BlockIndependenceMH>(variational_proposal(q, o.proposal_df, o.proposal_inflation), split);
    };
    if (method == "varmh")
        return std::make_unique<IndependenceMH>(exact ? exact->joint()
                                                      : variational_proposal(q, o.proposal_df, o.proposal_inflation));
    if (method == "varblock") {
        if (!exact)
            return std::make_unique<BlockIndependenceMH>(variational_proposal(q, o.proposal_df, o.proposal_inflation),
                                                         o.varblock_split);
        VarblockProposals v = varblock_proposals(*exact, o);
        inference::BlockRecentre recentre = o.varblock_recentre;
        recentre.enabled = v.any_recentre();
        recentre.blocks = std::move(v.recentre);
        return std::make_unique<BlockIndependenceMH>(std::move(v.blocks), o.varblock_split, recentre,
                                                     std::move(v.overrelax));
    }
    if (method == "varmix") {
        RandomWalkOptions ro;
        ro.mode = BlockMode::per_block;
        // Fully observed, the posterior is a product of logistic regressions that the
        // variational block marginals fit closely: the original mixture is better there.
        // With unobserved values in a small model: the modes' mixture, unless no mode was found.
        if (auto jumps = mode_mixture_kernel(graph, target, modes, o, notes)) return jumps;
        return std::make_unique<Mixture>(o.mixture_nu, block_moves(), std::make_unique<RandomWalk>(q.covs, ro));
    }
    if (method == "regen") {
        RegenerationOptions ro;
        // The same modes' mixture, matched by one t's mean and covariance, as the starting
        // proposal: far wider than VB, so the first tours cover every mode it found.
        if (!modes.empty()) {
            notes.push_back(fmt::format("regen: starting proposal t({:g}) with the mean and covariance (x {:g}) of the Laplace "
                                        "fits at {}",
                                        mode_proposal_df, mode_proposal_inflation, modes_found(modes)));
            return std::make_unique<RegenerationKernel>(moment_matched_proposal(modes), ro);
        }
        return std::make_unique<RegenerationKernel>(
            exact ? exact->joint() : variational_proposal(q, o.proposal_df, o.proposal_inflation), ro);
    }
    if (method == "nuts") return make_nuts_kernel(q, o, graph, target, adapt_delta);
    if (method == "gibbs") return make_gibbs_kernel(q, o);
    throw Error(ErrorKind::usage, fmt::format("unknown method '{}'", method));
}

}  // namespace

FitResult fit(const ir::Graph& graph, const Dataset& data, const FitOptions& o) {
    if (o.chains < 1) throw Error(ErrorKind::usage, "--chains must be at least 1");
    if (o.warmup < 0) throw Error(ErrorKind::usage, "--warmup must not be negative");
    if (o.draws < 1) throw Error(ErrorKind::usage, "--draws must be at least 1");
    if (o.threads < 1) throw Error(ErrorKind::usage, "--threads must be at least 1");
    nuts_adapt_delta(graph, data, o.adapt_delta);  // throws on a value outside (0, 1)
    if (!(o.varblock_overrelax > -1 && o.varblock_overrelax < 1))
        throw Error(ErrorKind::usage, fmt::format("--overrelax must lie strictly between -1 and 1, got {}", o.varblock_overrelax));
    if (o.proposal != "laplace" && o.proposal != "vb")
        throw Error(ErrorKind::usage, fmt::format("unknown proposal '{}'; choose laplace or vb", o.proposal));
    const auto& names = method_names();
    if (std::find(names.begin(), names.end(), o.method) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw Error(ErrorKind::usage, fmt::format("unknown method '{}'; choose one of {}", o.method, list));
    }

    FitResult r;
    if (graph.dim == 0) throw Error(ErrorKind::usage, "the model has no parameters to sample");
    std::string why;
    r.method = o.method == "auto" ? choose_method(graph, data, &why) : o.method;
    r.threads = o.threads;
    if (o.method == "auto") r.notes.push_back(fmt::format("method auto chose {}: {}", r.method, why));
    if (r.method == "regen" && graph.dim > max_dense_dim)
        throw Error(ErrorKind::limit, fmt::format("--method regen adapts dense {0} x {0} covariances, too large for {0} "
                                                  "parameters (at most {1}); use --method varblock, varmix or nuts",
                                                  graph.dim, max_dense_dim));

    // The chains, the pilot and the summary split their work over threads: started now, they
    // are running by the time the first of those needs them (one at least where the proposal is
    // built beside the variational fit, below).
    const bool unobserved = has_unobserved_values(graph, data);
    bool proposal_beside_vb = !unobserved && uses_exact_proposal(r.method, o);
    if (o.threads > 1)
        inference::start_workers(static_cast<std::size_t>(std::max(proposal_beside_vb ? 1 : 0, std::min(o.threads, o.chains) - 1)));

    const auto t_target = std::chrono::steady_clock::now();
    std::unique_ptr<Target> target;
    const auto compile = [&] {
        if (r.method != "gibbs") {
            try {
                target = make_target(graph, data, o.max_enumerated);
            } catch (const Error& e) {
                // Too many unobserved values to sum out: auto samples them instead.
                if (o.method != "auto" || e.kind() != ErrorKind::limit) throw;
                r.method = "gibbs";
                r.notes.back() = fmt::format("method auto chose gibbs: some rows have more than {} unobserved values "
                                             "linked together, too many to sum out",
                                             o.max_enumerated);
            }
        }
        if (r.method == "gibbs") target = make_complete_data_target(graph, data);
    };

    // With every node observed each block's posterior is a Bayesian logistic regression, with
    // one mode, so the exact proposal's Newton can start at the prior mean rather than the VB
    // mean, and the variational fit needs nothing from the target: with two threads or more the
    // fit runs on a worker from the start (on its own copy of the data's patterns), while this
    // thread compiles the target and builds the proposal; the worker, once the fit is done,
    // joins in the proposal's pilot draws. With one thread the proposal is built after the fit
    // from the same start, so the draws do not depend on the thread count. Where Newton does
    // not get there from the prior mean, it starts from the VB mean after all (exact_proposal).
    // At 20 weights a whole run took 10.0 ms against 10.4 with the fit after the target
    // (medians of 60 alternated runs).
    std::optional<LaplaceProposal> early;
    inference::ChunkShare share;
    const auto build_early = [&](inference::ChunkShare* with) {
        LaplaceProposalOptions lo = laplace_options(o);
        lo.share = with;
        early = laplace_proposal(*target, prior_mean(graph), lo);
    };
    // The phases as the run waited for them: the target; what is left of the variational fit
    // after it; and, from the end of both, what is left of the proposal.
    auto t_proposal = t_target;
    if (proposal_beside_vb && o.threads > 1) {
        std::exception_ptr target_error, vb_error, proposal_error;
        auto target_done = t_target, vb_done = t_target;
        inference::run_parts(2, [&](std::size_t part) {
            if (part == 1) {
                try {
                    r.vb = variational(graph, data, o.vb);
                } catch (...) {
                    vb_error = std::current_exception();
                }
                vb_done = std::chrono::steady_clock::now();
                share.join();
                return;
            }
            struct Closing {
                inference::ChunkShare& s;
                ~Closing() { s.close(); }
            } closing{share};
            try {
                compile();
            } catch (...) {
                target_error = std::current_exception();
            }
            target_done = std::chrono::steady_clock::now();
            proposal_beside_vb = !target_error && uses_exact_proposal(r.method, o);
            if (!proposal_beside_vb) return;
            try {
                build_early(&share);
            } catch (...) {
                proposal_error = std::current_exception();
            }
        });
        for (const auto& e : {target_error, vb_error, proposal_error})
            if (e) std::rethrow_exception(e);
        r.target_seconds = std::chrono::duration<double>(target_done - t_target).count();
        t_proposal = std::max(target_done, vb_done);
        r.vb_seconds = std::chrono::duration<double>(t_proposal - target_done).count();
        if (o.on_vb) o.on_vb(r.vb.best_fit(), r.method);
    } else {
        compile();
        r.target_seconds = inference::seconds_since(t_target);
        const auto t0 = std::chrono::steady_clock::now();
        r.vb = variational(graph, target->families(), o.vb);
        t_proposal = std::chrono::steady_clock::now();
        r.vb_seconds = std::chrono::duration<double>(t_proposal - t0).count();
        if (o.on_vb) o.on_vb(r.vb.best_fit(), r.method);
        proposal_beside_vb = proposal_beside_vb && uses_exact_proposal(r.method, o);
        if (proposal_beside_vb) build_early(nullptr);
    }
    for (const auto& n : target->notes()) r.notes.push_back(n);
    const VbFit& q = r.vb.best_fit();

    r.order = output_order(graph);
    for (int k : r.order) {
        r.names.push_back(graph.theta_name(k));
        r.csv_names.push_back(graph.theta_csv_name(k));
    }

    // Initial points dispersed around the variational fit (wider than it), so chains start
    // apart and R-hat can see a failure to mix; stream 1 of the seed, apart from the chains'.
    inference::Rng init_rng(o.seed, 1);
    GaussianProposal init = variational_proposal(q, 4.0, o.init_inflation);
    std::vector<Eigen::VectorXd> inits;
    for (int c = 0; c < o.chains; ++c) {
        Eigen::VectorXd x(graph.dim);
        init.sample(init_rng, x);
        inits.push_back(std::move(x));
    }

    const bool mode_search = searches_modes(r.method, graph, unobserved);
    const std::vector<PosteriorMode> modes = mode_search ? search_modes(graph, *target, q, o) : std::vector<PosteriorMode>{};
    const std::optional<LaplaceProposal> exact =
        modes.empty() ? exact_proposal(r.method, *target, q, o, std::move(early), r.notes) : std::nullopt;
    if (r.method == "varblock")
        if (auto note = split_note(graph, o.varblock_split, exact ? &*exact : nullptr)) r.notes.push_back(std::move(*note));
    if (r.method == "varblock" && exact)
        if (auto note = whole_block_note(*exact, o)) r.notes.push_back(std::move(*note));
    if (r.method == "nuts") {
        r.adapt_delta = nuts_adapt_delta(graph, data, o.adapt_delta);
        if (o.adapt_delta == 0 && r.adapt_delta != 0.8)
            r.notes.push_back(fmt::format("nuts: target acceptance {} (log-concave posterior: every node observed, {} parameters); "
                                          "--adapt-delta sets it",
                                          r.adapt_delta, graph.dim));
    }
    const std::unique_ptr<inference::Kernel> kernel =
        build_kernel(r.method, q, o, graph, *target, modes, exact ? &*exact : nullptr, r.adapt_delta, r.notes);
    r.kernel = kernel->name();
    std::unique_ptr<GibbsModel> gibbs_model;
    std::unique_ptr<inference::DensityFactory> factory;
    if (r.method == "gibbs") {
        gibbs_model = std::make_unique<GibbsModel>(graph, *target);
        factory = std::make_unique<GibbsDensityFactory>(*gibbs_model);
    } else {
        factory = std::make_unique<TargetDensityFactory>(*target);
    }
    inference::ChainSettings s;
    inference::copy_chain_settings(o, s);
    r.proposal_seconds = inference::seconds_since(t_proposal);
    const auto t1 = std::chrono::steady_clock::now();
    inference::ChainCallbacks callbacks = o.callbacks;
    if (!callbacks.parameter_name) callbacks.parameter_name = [&graph](int i) { return graph.theta_name(i); };
    r.chains = inference::run_chains(*factory, *kernel, inits, s, callbacks);
    const double wall = inference::seconds_since(t1);

    // Wall time split in the proportion the chains spent in each phase.
    double w = 0, d = 0;
    int failed = 0;
    for (const auto& c : r.chains) {
        w += c.warmup_seconds;
        d += c.sampling_seconds;
        if (!c.ok()) ++failed;
    }
    r.warmup_seconds = w + d > 0 ? wall * w / (w + d) : 0;
    r.sampling_seconds = wall - r.warmup_seconds;
    if (failed == o.chains) {
        std::string msg = "every chain failed:";
        for (const auto& c : r.chains) msg += fmt::format("\n  {}", c.error);
        throw Error(ErrorKind::inference, msg);
    }
    return r;
}

}  // namespace vbn
