// Log density + gradient evaluations of the compiled target per second.
//
// Data of the paper's unimodal form (Variational MCMC, Sec. 5.1): one child y with d parents
// x_k = ±1, P(+1) = 0.5, fixed offset 0.5, weights Uniform(0, 1], prior N(0, 100 I).
// Arithmetic per evaluation: patterns × d multiply-adds for F θ and as many for F' r, and
// one log1p_exp-type call per pattern. BM_Floor does exactly that arithmetic on the same F
// with nothing else, so Unimodal / Floor is how close the target comes to it.
//
// The SBN case (3 hidden causes, 8 observed effects) measures the enumerated components;
// Sbn2 is tests/corpus/sbn2 (two hidden layers, components of 5 over 2,000 rows; also every
// data pattern's own log-likelihood, as `vbn fit --log-lik` takes them), and
// MissingCovariate a node missing in 30% of rows whose factors depend on a real covariate, so
// that no two components share a factor. Product times a component whose factors hold
// products of parents (r * t, h1 * h2) beside the same model without the product term.
#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/dataset_builder.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "tests/support/graph_builder.hpp"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using namespace vbn;
using inference::Rng;

std::size_t sz(int i) { return static_cast<std::size_t>(i); }

ir::Element binary_element(int variable, int index, const std::string& name, bool hidden) {
    ir::Element e;
    e.variable = variable;
    e.index = index;
    e.name = name;
    e.hidden = hidden;
    return e;
}

// node x[d] ~ bernoulli(0.5); node y ~ logistic(0.5 + w * x); w ~ normal(0, 10).
ir::Graph unimodal_graph(int d) {
    ir::Graph g;
    g.name = "unimodal";
    g.variables.push_back({"x", ir::VariableKind::binary, false, true, d, 0, {}});
    g.variables.push_back({"y", ir::VariableKind::binary, false, false, 1, d, {}});
    for (int k = 0; k < d; ++k) {
        g.elements.push_back(binary_element(0, k, "x[" + std::to_string(k + 1) + "]", false));
        ir::Cpd c;
        c.offset = 0;  // logit 0.5
        g.cpds.push_back(c);
    }
    g.elements.push_back(binary_element(1, 0, "y", false));
    ir::Cpd y;
    y.logistic = true;
    y.offset = 0.5;
    for (int k = 0; k < d; ++k) y.features.push_back({k, 1.0, {}, k});
    y.block = 0;
    g.cpds.push_back(y);
    for (int e = 0; e <= d; ++e) g.topological_order.push_back(e);
    ir::Block b;
    b.element = d;
    b.elements = {d};
    b.size = d;
    b.prior_mean.assign(sz(d), 0.0);
    b.prior_cov.assign(sz(d * d), 0.0);
    for (int k = 0; k < d; ++k) b.prior_cov[sz(k * d + k)] = 100.0;
    g.blocks.push_back(b);
    ir::Parameter p;
    p.name = "w";
    p.shape = {d};
    for (int k = 0; k < d; ++k) p.theta_index.push_back(k);
    g.parameters.push_back(p);
    g.dim = d;
    return g;
}

using test::unimodal_data;

// node h[3] hidden ~ bernoulli(0.5); node v[8] ~ logistic(b + W * h); b, W ~ normal(0, sqrt(10)).
ir::Graph sbn_graph() {
    ir::Graph g;
    g.name = "sbn";
    g.variables.push_back({"h", ir::VariableKind::binary, true, true, 3, 0, {}});
    g.variables.push_back({"v", ir::VariableKind::binary, false, true, 8, 3, {}});
    for (int k = 0; k < 3; ++k) {
        g.elements.push_back(binary_element(0, k, "h[" + std::to_string(k + 1) + "]", true));
        g.cpds.emplace_back();
    }
    for (int k = 0; k < 8; ++k) {
        g.elements.push_back(binary_element(1, k, "v[" + std::to_string(k + 1) + "]", false));
        ir::Cpd c;
        c.logistic = true;
        c.features = {{-1, 1.0, {}, 0}, {0, 1.0, {}, 1}, {1, 1.0, {}, 2}, {2, 1.0, {}, 3}};
        c.block = k;
        g.cpds.push_back(c);
        ir::Block b;
        b.element = 3 + k;
        b.elements = {3 + k};
        b.offset = 4 * k;
        b.size = 4;
        b.prior_mean.assign(4, 0.0);
        b.prior_cov.assign(16, 0.0);
        for (int i = 0; i < 4; ++i) b.prior_cov[sz(5 * i)] = 10.0;
        g.blocks.push_back(b);
    }
    for (int e = 0; e < 11; ++e) g.topological_order.push_back(e);
    g.dim = 32;
    return g;
}

Dataset sbn_data(const ir::Graph& g, long rows, std::uint64_t seed) {
    Rng rng(seed);
    Eigen::VectorXd theta(32);
    for (int k = 0; k < 32; ++k) theta[k] = 2 * rng.normal();
    DatasetBuilder builder(g, "sbn");
    std::vector<std::int8_t> row(8);
    for (long t = 0; t < rows; ++t) {
        double h[3];
        for (auto& v : h) v = rng.bernoulli(0.5) ? 1 : -1;
        for (int k = 0; k < 8; ++k) {
            const double eta = theta[4 * k] + theta[4 * k + 1] * h[0] + theta[4 * k + 2] * h[1] + theta[4 * k + 3] * h[2];
            row[sz(k)] = rng.bernoulli(inference::inv_logit(eta)) ? 1 : -1;
        }
        builder.add_coded_row(row, {});
    }
    return builder.finish();
}

// Targets are expensive to build at 10^6 rows: build each once.
const Target& unimodal_target(int d, long rows) {
    static std::map<std::pair<int, long>, std::unique_ptr<Target>> cache;
    auto& slot = cache[{d, rows}];
    if (!slot) {
        const ir::Graph g = unimodal_graph(d);
        slot = std::make_unique<Target>(g, unimodal_data(g, d, rows, 510 + static_cast<std::uint64_t>(d)));
    }
    return *slot;
}

Eigen::VectorXd point(int dim) {
    Rng rng(7);
    Eigen::VectorXd theta(dim);
    for (int k = 0; k < dim; ++k) theta[k] = 1.0 - rng.uniform();
    return theta;
}

void set_counters(benchmark::State& state, const CompleteFamily& cf) {
    const double madds = 2.0 * cf.patterns() * static_cast<double>(cf.f.cols());
    state.counters["patterns"] = cf.patterns();
    state.counters["madds_per_eval"] = madds;
    state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Unimodal(benchmark::State& state) {
    const int d = static_cast<int>(state.range(0));
    const Target& target = unimodal_target(d, state.range(1));
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    Eigen::VectorXd grad(target.dim());
    for (auto _ : state) {
        benchmark::DoNotOptimize(target.log_density_gradient(theta, grad, ws));
        benchmark::ClobberMemory();
    }
    set_counters(state, target.complete_family(0));
}

void BM_UnimodalValueOnly(benchmark::State& state) {
    const int d = static_cast<int>(state.range(0));
    const Target& target = unimodal_target(d, state.range(1));
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    for (auto _ : state) benchmark::DoNotOptimize(target.log_density(theta, ws));
    set_counters(state, target.complete_family(0));
}

// The arithmetic floor: F θ, one log1p_exp per pattern, F' r, on the same patterns.
void BM_Floor(benchmark::State& state) {
    const int d = static_cast<int>(state.range(0));
    const CompleteFamily& cf = unimodal_target(d, state.range(1)).complete_family(0);
    const Eigen::VectorXd theta = point(d);
    Eigen::VectorXd eta(cf.patterns()), grad(d);
    for (auto _ : state) {
        eta.noalias() = cf.f * theta;
        double value = 0;
        for (int t = 0; t < cf.patterns(); ++t) {
            const double l = inference::log1p_exp(eta[t]);
            value += l;
            eta[t] = l;
        }
        grad.noalias() = cf.f.transpose() * eta;
        benchmark::DoNotOptimize(value);
        benchmark::DoNotOptimize(grad.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, cf);
}

void unimodal_args(benchmark::internal::Benchmark* b) {
    b->Args({5, 1000})->Args({10, 1000})->Args({20, 1000})->Args({50, 1000})->Args({50, 1000000})->Unit(benchmark::kMicrosecond);
}

// Building the target: reading the patterns into per-node families (the data set given).
void BM_Build(benchmark::State& state) {
    const int d = static_cast<int>(state.range(0));
    const ir::Graph g = unimodal_graph(d);
    const Dataset data = unimodal_data(g, d, state.range(1), 510 + static_cast<std::uint64_t>(d));
    for (auto _ : state) {
        Target target(g, data);
        benchmark::DoNotOptimize(target.dim());
    }
    state.counters["rows_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * state.range(1)), benchmark::Counter::kIsRate);
}

BENCHMARK(BM_Build)->Args({10, 1000})->Args({50, 1000000})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Unimodal)->Apply(unimodal_args);
BENCHMARK(BM_UnimodalValueOnly)->Apply(unimodal_args);
BENCHMARK(BM_Floor)->Apply(unimodal_args);

const Target& sbn_target() {
    static const Target target = [] {
        const ir::Graph g = sbn_graph();
        return Target(g, sbn_data(g, 200, 38));
    }();
    return target;
}

// The summed-out cases below all time through these loops, so that their figures compare:
// the full log density and gradient, or one block's.
void gradient_loop(benchmark::State& state, const Target& target) {
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    Eigen::VectorXd grad(target.dim());
    for (auto _ : state) benchmark::DoNotOptimize(target.log_density_gradient(theta, grad, ws));
    state.counters["components"] = static_cast<double>(target.families().components.size());
    state.counters["direct"] = static_cast<double>(target.directly_summed_components());
    state.counters["eliminated"] = static_cast<double>(target.eliminated_components());
    state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void block_loop(benchmark::State& state, const Target& target, int b) {
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    Eigen::VectorXd grad(target.block_size(b));
    for (auto _ : state) benchmark::DoNotOptimize(target.block_log_density_gradient(b, theta, grad, ws));
    state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// 3 hidden causes summed out in every row: 2^3 configurations × 8 factors per distinct row.
void BM_SbnFull(benchmark::State& state) { gradient_loop(state, sbn_target()); }
void BM_SbnBlock(benchmark::State& state) { block_loop(state, sbn_target(), 0); }

BENCHMARK(BM_SbnFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SbnBlock)->Unit(benchmark::kMicrosecond);

// A corpus model by name (tests/corpus/NAME), with the data patterns' terms kept
// (TargetOptions::pattern_terms) for pattern_loop where asked: House votes is one hidden class
// over 342 distinct rows of 16 votes with missing entries, two configurations of 17 factors each.
const Target& corpus_target(const std::string& name, bool pattern_terms = false) {
    static std::map<std::pair<std::string, bool>, std::unique_ptr<Target>> cache;
    auto& slot = cache[{name, pattern_terms}];
    if (!slot) {
        const std::string dir = std::string(VBN_SOURCE_DIR) + "/tests/corpus/" + name + "/";
        const ir::Graph g = load_model(dir + "model.vbn");
        slot = std::make_unique<Target>(g, load_csv(g, dir + "data.csv"), TargetOptions{.pattern_terms = pattern_terms});
    }
    return *slot;
}

// The two-layer network: 2 top causes and 3 hidden features summed out in every row.
const Target& sbn2_target(bool pattern_terms = false) { return corpus_target("sbn2", pattern_terms); }

// covariate x; node a ~ logistic(c * [1, x]); node y ~ logistic(w * [1, a, x]); a missing in
// 30% of 2,000 rows, x standard normal: every component is its own.
const Target& missing_covariate_target() {
    static const Target target = [] {
        test::GraphBuilder m;
        const int x = m.covariate("x");
        const int a = m.logistic_block("a", false, 0.0, {}, {test::bias(), test::on(x)}, "c", {2}, {0, 0}, {4, 0, 0, 4});
        m.logistic_block("y", false, 0.0, {}, {test::bias(), test::on(a), test::on(x)}, "w", {3}, {0, 0, 0},
                         {4, 0, 0, 0, 4, 0, 0, 0, 4});
        Rng rng(41);
        std::vector<test::Row> rows;
        for (int t = 0; t < 2000; ++t) {
            const double xv = rng.normal();
            const double av = rng.bernoulli(inference::inv_logit(0.5 + xv)) ? 1 : -1;
            const double yv = rng.bernoulli(inference::inv_logit(-0.5 + av - xv)) ? 1 : -1;
            rows.push_back({xv, rng.uniform() < 0.3 ? 0.0 : av, yv});
        }
        return Target(m.g, test::make_dataset(m.g, rows));
    }();
    return target;
}

// Every data pattern's own log-likelihood at once (`vbn fit --log-lik`, one call per draw).
void pattern_loop(benchmark::State& state, const Target& target) {
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    Eigen::VectorXd out(target.patterns());
    for (auto _ : state) {
        target.pattern_log_likelihoods(theta, out, ws);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    state.counters["patterns"] = target.patterns();
    state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Sbn2Full(benchmark::State& state) { gradient_loop(state, sbn2_target()); }
void BM_Sbn2Patterns(benchmark::State& state) { pattern_loop(state, sbn2_target(true)); }
void BM_Sbn2Block(benchmark::State& state) { block_loop(state, sbn2_target(), 0); }
void BM_MissingCovariateFull(benchmark::State& state) { gradient_loop(state, missing_covariate_target()); }
void BM_MissingCovariateBlock(benchmark::State& state) { block_loop(state, missing_covariate_target(), 0); }

void value_loop(benchmark::State& state, const Target& target) {
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    for (auto _ : state) benchmark::DoNotOptimize(target.log_density(theta, ws));
    state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_HouseVotesFull(benchmark::State& state) { gradient_loop(state, corpus_target("housevotes")); }
void BM_HouseVotesValue(benchmark::State& state) { value_loop(state, corpus_target("housevotes")); }
void BM_DiagnosisFull(benchmark::State& state) { gradient_loop(state, corpus_target("diagnosis")); }
void BM_SurveyFull(benchmark::State& state) { gradient_loop(state, corpus_target("survey")); }
// 500 sites, each with its own covariates: the hidden node's logit differs in every row.
void BM_OccupancyFull(benchmark::State& state) { gradient_loop(state, corpus_target("occupancy")); }
void BM_Sbn3x8Full(benchmark::State& state) { gradient_loop(state, corpus_target("sbn_3x8")); }

BENCHMARK(BM_HouseVotesFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HouseVotesValue)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DiagnosisFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SurveyFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OccupancyFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sbn3x8Full)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sbn2Full)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sbn2Block)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Sbn2Patterns)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MissingCovariateFull)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MissingCovariateBlock)->Unit(benchmark::kMicrosecond);

// Where enumeration gives way to variable elimination (Summation, runtime/target/families.hpp):
// a hidden chain h1 → … → hm (each h_i on h_{i−1}, learned weights) with one observed child
// each, and a ladder where h_i also reads h_{i−2} (width 3). 200 rows from fixed weights, so
// every row is its own component of m values: enumeration sums 2^m configurations of 2m
// factors, elimination Σ 2^|clique| terms (about 4m for the chain, 8m for the ladder).
const Target& hidden_chain_target(int m, int reach, Summation how) {
    static std::map<std::tuple<int, int, int>, std::unique_ptr<Target>> cache;
    auto& slot = cache[{m, reach, static_cast<int>(how)}];
    if (slot) return *slot;
    test::GraphBuilder b;
    std::vector<int> h;
    for (int i = 0; i < m; ++i) {
        const std::string k = std::to_string(i + 1);
        std::vector<ir::Feature> f{test::bias()};
        for (int back = 1; back <= reach && back <= i; ++back) f.push_back(test::on(h[sz(i - back)]));
        const int n = static_cast<int>(f.size());
        h.push_back(b.logistic_block("h" + k, true, 0.0, {}, f, "v" + k, {n}, std::vector<double>(sz(n), 0.0),
                                     test::diagonal_cov(std::vector<double>(sz(n), 2.0))));
        b.logistic_block("o" + k, false, 0.0, {}, {test::bias(), test::on(h.back())}, "w" + k, {2}, {0, 0},
                         {4, 0, 0, 4});
    }
    Rng rng(53);
    std::vector<test::Row> rows;
    for (int t = 0; t < 200; ++t) {
        test::Row r(sz(2 * m), 0.0);
        std::vector<double> hv;
        for (int i = 0; i < m; ++i) {
            double eta = 0.3;
            for (int back = 1; back <= reach && back <= i; ++back) eta += 1.5 * hv[sz(i - back)];
            hv.push_back(rng.bernoulli(inference::inv_logit(eta)) ? 1 : -1);
            r[sz(2 * i + 1)] = rng.bernoulli(inference::inv_logit(-0.2 + 1.5 * hv.back())) ? 1 : -1;
        }
        rows.push_back(std::move(r));
    }
    TargetOptions o;
    o.summation = how;
    o.max_enumerated = 14;
    slot = std::make_unique<Target>(b.g, test::make_dataset(b.g, rows), o);
    return *slot;
}

void BM_ChainEnumerated(benchmark::State& state) {
    gradient_loop(state, hidden_chain_target(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                             Summation::enumerate));
}
void BM_ChainEliminated(benchmark::State& state) {
    gradient_loop(state, hidden_chain_target(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                             Summation::eliminate));
}

void BM_ChainAutomatic(benchmark::State& state) {
    gradient_loop(state, hidden_chain_target(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)),
                                             Summation::automatic));
}

void chain_args(benchmark::internal::Benchmark* b) {
    for (int reach : {1, 2})
        for (int m : {4, 6, 7, 8, 9, 10, 12}) b->Args({m, reach});
    b->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_ChainEnumerated)->Apply(chain_args);
BENCHMARK(BM_ChainEliminated)->Apply(chain_args);
BENCHMARK(BM_ChainAutomatic)->Apply(chain_args);

// Products of parents in the summed-out component (`w * [r, t, r * t]`), beside the same
// model without the product term, on the same 2,000 rows (a real covariate, so every row is
// its own component). Kind 0: one hidden r times an observed t; kind 1: a product of two
// hidden nodes, h1 * h2, in a component of 4 configurations. The product model simulates
// the rows for both, so the pair differs only in the one feature per configuration.
std::string product_model(int kind, bool product) {
    if (kind == 0)
        return std::string("covariate x;\nnode t ~ bernoulli(0.5);\nnode r hidden ~ logistic(a + u * x);\n"
                           "node m[3] ~ logistic(c + v * r);\nnode y[2] ~ logistic(b + w * [r, t") +
               (product ? ", r * t" : "") + "]);\na, u, c, v, b, w ~ normal(0, 2.5);\n";
    return std::string("covariate x;\nnode h1 hidden ~ logistic(a1 + u1 * x);\n"
                       "node h2 hidden ~ logistic(a2 + u2 * x);\nnode m[4] ~ logistic(c + v * [h1, h2]);\n"
                       "node y[2] ~ logistic(b + w * [h1, h2") +
           (product ? ", h1 * h2" : "") + "]);\na1, u1, a2, u2, c, v, b, w ~ normal(0, 2.5);\n";
}

// Rows drawn from graph g at weights θ = 2 point(dim): covariates standard normal, every node
// from its CPD (test::eta_of) in topological order; hidden values stay in the row, unread.
std::vector<test::Row> simulate_rows(const ir::Graph& g, long n, std::uint64_t seed) {
    const Eigen::VectorXd theta = 2.0 * point(g.dim);
    Rng rng(seed);
    std::vector<test::Row> rows;
    for (long i = 0; i < n; ++i) {
        test::Row x(g.elements.size(), 0.0);
        for (std::size_t e = 0; e < x.size(); ++e)
            if (!g.elements[e].binary) x[e] = rng.normal();
        for (int e : g.topological_order) {
            if (!g.elements[sz(e)].binary) continue;
            const double eta = test::eta_of(g, e, x, theta);
            x[sz(e)] = rng.bernoulli(inference::inv_logit(eta)) ? 1 : -1;
        }
        rows.push_back(std::move(x));
    }
    return rows;
}

const Target& product_target(int kind, bool product) {
    static std::map<std::pair<int, bool>, std::unique_ptr<Target>> cache;
    auto& slot = cache[{kind, product}];
    if (slot) return *slot;
    const auto rows = simulate_rows(compile_model(product_model(kind, true), "bench"), 2000, 61);
    const ir::Graph g = compile_model(product_model(kind, product), "bench");
    slot = std::make_unique<Target>(g, test::make_dataset(g, rows));
    return *slot;
}

// Args: kind (0: r * t, 1: h1 * h2), product term (1) or not (0).
void BM_Product(benchmark::State& state) {
    gradient_loop(state, product_target(static_cast<int>(state.range(0)), state.range(1) != 0));
}
void BM_ProductValueOnly(benchmark::State& state) {
    const Target& target = product_target(static_cast<int>(state.range(0)), state.range(1) != 0);
    auto ws = target.make_workspace();
    const Eigen::VectorXd theta = point(target.dim());
    for (auto _ : state) benchmark::DoNotOptimize(target.log_density(theta, ws));
    state.counters["evals_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
void product_args(benchmark::internal::Benchmark* b) {
    b->Args({0, 0})->Args({0, 1})->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_Product)->Apply(product_args);
BENCHMARK(BM_ProductValueOnly)->Apply(product_args);

}  // namespace

BENCHMARK_MAIN();
