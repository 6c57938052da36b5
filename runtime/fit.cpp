#include "runtime/fit.hpp"

#include "inference/block_mh.hpp"
#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/nuts.hpp"
#include "inference/random_walk.hpp"
#include "inference/regeneration.hpp"
#include "runtime/error.hpp"
#include "runtime/gibbs.hpp"
#include "runtime/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace vbn {

const std::vector<std::string>& method_names() {
    static const std::vector<std::string> names{"auto", "rwm", "varmh", "varblock", "varmix", "regen", "nuts", "gibbs"};
    return names;
}

// By the figures of bench/speed_table (docs/methods.md, "Choosing a method"): independence
// proposals from the variational fit beat NUTS per second while every block is small, and
// lose by orders of magnitude once a block is large (the importance weights of a t proposal
// in 50 dimensions vary too much: ESS 17 of 4,000 at d = 50); summed-out hidden values skew
// the posterior, where NUTS mixed best on the small multimodal model and the variational
// mixture is the cheaper choice when hidden units make the posterior multimodal anyway.
std::string choose_method(const ir::Graph& graph, const Dataset& data, std::string* why) {
    bool unobserved = false;
    for (std::size_t e = 0; e < graph.elements.size(); ++e) {
        const ir::Element& el = graph.elements[e];
        if (!el.binary) continue;
        if (el.hidden) unobserved = true;
        else if (data.column_of[e] >= 0 && data.missing[static_cast<std::size_t>(data.column_of[e])] > 0) unobserved = true;
    }
    int largest_block = 0;
    for (const auto& b : graph.blocks) largest_block = std::max(largest_block, b.size);
    constexpr int max_independence_block = 20;  // varblock still ahead of nuts at 20 weights
    constexpr int max_hidden_dim = 10;          // nuts ahead on the 2-weight multimodal model
    if (!unobserved) {
        if (largest_block <= max_independence_block) {
            if (why)
                *why = fmt::format("every node is observed and no node has more than {} weights: block "
                                   "independence proposals from the variational fit",
                                   max_independence_block);
            return "varblock";
        }
        if (why)
            *why = fmt::format("a node has {} weights, too many for independence proposals: NUTS", largest_block);
        return "nuts";
    }
    if (graph.dim <= max_hidden_dim) {
        if (why) *why = "hidden or missing values skew a small posterior: NUTS";
        return "nuts";
    }
    if (why) *why = "hidden or missing values couple blocks: variational block moves mixed with a random walk";
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
    GaussianProposal p(q.mean, q.cov, df);
    if (inflation != 1.0) p.inflate(inflation);
    return p;
}

// gibbs: a sweep over the unobserved values, then each block of θ given them by independence
// MH from the Laplace approximation of its complete-data conditional (runtime/gibbs.hpp).
std::unique_ptr<inference::Kernel> make_gibbs_kernel(const VbFit& q, const FitOptions& o) {
    using namespace inference;
    std::vector<std::unique_ptr<Kernel>> parts;
    parts.push_back(std::make_unique<HiddenGibbs>());
    parts.push_back(std::make_unique<ConditionalLaplaceMH>(q.mean, o.proposal_df, 1.0));
    return std::make_unique<Cycle>(std::move(parts));
}

std::unique_ptr<inference::Kernel> build_kernel(const std::string& method, const VbFit& q, const FitOptions& o) {
    using namespace inference;
    if (method == "rwm") {
        RandomWalkOptions ro;
        ro.mode = BlockMode::whole;
        return std::make_unique<RandomWalk>(q.cov, ro);
    }
    if (method == "varmh") return std::make_unique<IndependenceMH>(variational_proposal(q, o.proposal_df, o.proposal_inflation));
    if (method == "varblock")
        return std::make_unique<BlockIndependenceMH>(variational_proposal(q, o.proposal_df, o.proposal_inflation));
    if (method == "varmix") {
        RandomWalkOptions ro;
        ro.mode = BlockMode::per_block;
        return std::make_unique<Mixture>(
            o.mixture_nu, std::make_unique<BlockIndependenceMH>(variational_proposal(q, o.proposal_df, o.proposal_inflation)),
            std::make_unique<RandomWalk>(q.cov, ro));
    }
    if (method == "regen") {
        RegenerationOptions ro;
        return std::make_unique<RegenerationKernel>(variational_proposal(q, o.proposal_df, o.proposal_inflation), ro);
    }
    if (method == "nuts") return std::make_unique<NutsKernel>(EuclideanMetric::dense(q.cov));
    if (method == "gibbs") return make_gibbs_kernel(q, o);
    throw Error(ErrorKind::usage, fmt::format("unknown method '{}'", method));
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

FitResult fit(const ir::Graph& graph, const Dataset& data, const FitOptions& o) {
    if (o.chains < 1) throw Error(ErrorKind::usage, "--chains must be at least 1");
    if (o.warmup < 0) throw Error(ErrorKind::usage, "--warmup must not be negative");
    if (o.draws < 1) throw Error(ErrorKind::usage, "--draws must be at least 1");
    if (o.threads < 1) throw Error(ErrorKind::usage, "--threads must be at least 1");
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
    if (o.method == "auto") r.notes.push_back(fmt::format("method auto chose {}: {}", r.method, why));

    std::unique_ptr<Target> target;
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
    for (const auto& n : target->notes()) r.notes.push_back(n);

    const auto t0 = std::chrono::steady_clock::now();
    r.vb = variational(graph, target->families(), o.vb);
    r.vb_seconds = seconds_since(t0);
    const VbFit& q = r.vb.best_fit();
    if (o.on_vb) o.on_vb(q);

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

    const std::unique_ptr<inference::Kernel> kernel = build_kernel(r.method, q, o);
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
    s.warmup = o.warmup;
    s.draws = o.draws;
    s.seed = o.seed;
    s.chains = o.chains;
    s.threads = o.threads;
    s.keep_draws = o.keep_draws;
    const auto t1 = std::chrono::steady_clock::now();
    r.chains = inference::run_chains(*factory, *kernel, inits, s, o.callbacks);
    const double wall = seconds_since(t1);

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
        for (const auto& c : r.chains) msg += fmt::format("\n  chain {}: {}", c.chain + 1, c.error);
        throw Error(ErrorKind::inference, msg);
    }
    return r;
}

}  // namespace vbn
