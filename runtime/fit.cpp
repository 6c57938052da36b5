#include "runtime/fit.hpp"

#include "inference/block_mh.hpp"
#include "inference/gaussian.hpp"
#include "inference/independence_mh.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/nuts.hpp"
#include "inference/random_walk.hpp"
#include "inference/regeneration.hpp"
#include "runtime/error.hpp"
#include "runtime/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace vbn {

const std::vector<std::string>& method_names() {
    static const std::vector<std::string> names{"auto", "rwm", "varmh", "varblock", "varmix", "regen", "nuts"};
    return names;
}

std::string choose_method(const ir::Graph& graph, const Dataset& data, std::string* why) {
    bool unobserved = false;
    for (std::size_t e = 0; e < graph.elements.size(); ++e) {
        const ir::Element& el = graph.elements[e];
        if (!el.binary) continue;
        if (el.hidden) unobserved = true;
        else if (data.column_of[e] >= 0 && data.missing[static_cast<std::size_t>(data.column_of[e])] > 0) unobserved = true;
    }
    // With every node observed the posterior factorises over blocks, each a Bayesian
    // logistic regression that the variational marginal fits closely: block independence
    // MH draws nearly independent samples for one block's cost per move. Hidden or missing
    // values couple blocks and skew the posterior (§5.2), so the mixture adds local moves.
    if (!unobserved) {
        if (why) *why = "every node is observed: the posterior factorises over blocks";
        return "varblock";
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

namespace {
using inference::GaussianProposal;

GaussianProposal variational_proposal(const VbFit& q, double df, double inflation) {
    GaussianProposal p(q.mean, q.cov, df);
    if (inflation != 1.0) p.inflate(inflation);
    return p;
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

    const std::unique_ptr<Target> target = make_target(graph, data, o.max_enumerated);
    for (const auto& n : target->notes()) r.notes.push_back(n);

    const auto t0 = std::chrono::steady_clock::now();
    r.vb = variational(graph, target->families(), o.vb);
    r.vb_seconds = seconds_since(t0);
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

    const std::unique_ptr<inference::Kernel> kernel = build_kernel(r.method, q, o);
    r.kernel = kernel->name();
    TargetDensityFactory factory(*target);
    inference::ChainSettings s;
    s.warmup = o.warmup;
    s.draws = o.draws;
    s.seed = o.seed;
    s.chains = o.chains;
    s.threads = o.threads;
    s.keep_draws = o.keep_draws;
    const auto t1 = std::chrono::steady_clock::now();
    inference::ChainCallbacks callbacks = o.callbacks;
    if (!callbacks.parameter_name) callbacks.parameter_name = [&graph](int i) { return graph.theta_name(i); };
    r.chains = inference::run_chains(factory, *kernel, inits, s, callbacks);
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
        for (const auto& c : r.chains) msg += fmt::format("\n  {}", c.error);
        throw Error(ErrorKind::inference, msg);
    }
    return r;
}

}  // namespace vbn
