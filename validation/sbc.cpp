#include "validation/sbc.hpp"

#include "inference/clock.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/services/fit.hpp"

#include <boost/math/special_functions/gamma.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <sstream>

namespace vbn {

double SbcResult::min_p_value() const { return p_value.empty() ? 1.0 : *std::min_element(p_value.begin(), p_value.end()); }

double chi_square_upper_tail(double x, int df) {
    if (x <= 0) return 1.0;
    return boost::math::gamma_q(0.5 * df, 0.5 * x);
}

SbcResult run_sbc(const ir::Graph& graph, const SbcOptions& o, const ir::Graph* fitted) {
    if (o.replications < 1 || o.ranks < 1 || o.thin < 1 || o.chains < 1 || o.bins < 2 || o.rows < 1)
        throw Error(ErrorKind::usage, "sbc: replications, ranks, thin, chains and rows must be positive and bins at least 2");
    if ((o.ranks + 1) % o.bins != 0) throw Error(ErrorKind::usage, fmt::format("sbc: bins ({}) must divide ranks + 1 ({})", o.bins, o.ranks + 1));
    if (o.ranks % o.chains != 0) throw Error(ErrorKind::usage, "sbc: chains must divide ranks");
    const ir::Graph& model = fitted ? *fitted : graph;
    if (model.dim != graph.dim) throw Error(ErrorKind::usage, "sbc: the fitted model must have the same parameters");
    const auto t0 = std::chrono::steady_clock::now();
    SbcResult r;
    const std::vector<int> order = output_order(graph);
    for (int k : order) r.names.push_back(graph.theta_name(k));
    const std::size_t d = order.size();
    r.rank.assign(d, {});
    const int per_chain = o.ranks / o.chains;
    for (int rep = 0; rep < o.replications; ++rep) {
        inference::Rng rng(o.seed, static_cast<std::uint64_t>(rep));
        const Eigen::VectorXd theta = draw_prior(graph, rng);
        std::stringstream csv;
        SimulateOptions so;
        so.rows = o.rows;
        simulate_csv(graph, theta, so, rng, csv);
        const Dataset data = load_csv(model, csv, fmt::format("sbc replication {}", rep + 1));
        FitOptions fo;
        fo.method = o.method;
        fo.chains = o.chains;
        fo.threads = 1;
        fo.warmup = o.warmup;
        fo.draws = per_chain * o.thin;
        fo.seed = o.seed + static_cast<std::uint64_t>(rep);
        fo.max_draws = o.max_draws;
        fo.relabel = "none";  // ranks of the draws as drawn, whatever the model's symmetries
        FitResult f;
        try {
            // The chains run on (FitOptions::max_draws) only through the services' fit job.
            f = o.max_draws > fo.draws ? services::fit(model, data, fo, {}).result : fit(model, data, fo);
        } catch (const Error&) {
            ++r.failed_fits;
            continue;
        }
        for (std::size_t j = 0; j < d; ++j) {
            const int k = order[j];
            int rank = 0;
            const double truth = graph.constrain(k, theta[k]);  // draws hold a learned scale itself, θ its log
            // per_chain draws evenly spaced over each chain's n: draw thin·(i+1) − 1 when n is
            // per_chain · thin, as many as ran when the chain ran on.
            for (const auto& c : f.chains) {
                const auto n = static_cast<long>(c.draws.rows());
                if (n < per_chain) continue;
                for (long i = 0; i < per_chain; ++i) rank += c.draws((i + 1) * n / per_chain - 1, k) < truth ? 1 : 0;
            }
            r.rank[j].push_back(rank);
        }
    }
    const int width = (o.ranks + 1) / o.bins;
    for (std::size_t j = 0; j < d; ++j) {
        std::vector<int> h(static_cast<std::size_t>(o.bins), 0);
        for (int rank : r.rank[j]) ++h[static_cast<std::size_t>(rank / width)];
        const double n = static_cast<double>(r.rank[j].size());
        const double expected = n / o.bins;
        double chi = 0;
        for (int c : h) chi += (c - expected) * (c - expected) / expected;
        r.histogram.push_back(std::move(h));
        r.chi_square.push_back(chi);
        r.p_value.push_back(n > 0 ? chi_square_upper_tail(chi, o.bins - 1) : 0.0);
    }
    r.seconds = inference::seconds_since(t0);
    return r;
}

}  // namespace vbn
