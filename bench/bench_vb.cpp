// Variational EM to convergence (default options: relative ELBO tolerance 1e-9).
//
// Unimodal: the paper's Sec. 5.1 data — one child y with d parents x_k = ±1, P(+1) = 0.5,
// fixed offset 0.5, weights Uniform(0, 1], prior N(0, 10²), T = 1000 rows — for
// d = 1, 5, 10, 20, 50. Each EM iteration costs about 2 · patterns · d² multiply-adds
// (the precision's rank update and the ξ quadratic forms) plus a d³ Cholesky.
// Multimodal (Sec. 5.2, T = 50) and a 3 × 8 sigmoid belief network (T = 1000) time the
// mean-field part. The time includes building the families from the dataset.
//
// BM_VbAccuracy (one run per d, slow: filter it out for timings) compares the unimodal VB fit
// with a reference posterior from self-normalised importance sampling over the exact target
// (runtime/target/target.hpp), 200 000 draws from a Student-t (ν = 10) centred on the exact mode
// with the Laplace covariance, widened by 1.1 in scale. Counters: the weights' ESS and the
// reference's own Monte Carlo error of the mean in sd units (1/√ESS); for VB (and, for
// comparison, Laplace) the worst standardised mean error max_k |μ − μ_ref| / sd_ref and the
// worst sd error max_k |sd / sd_ref − 1|; and vb_proposal_ess, the ESS the same sampler
// gets from a t centred on the VB fit, widened by 1.2 — how well VB serves as a proposal;
// corrected_*: the same errors of the importance-corrected posterior that `vbn vb` reports.
#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "inference/gaussian.hpp"
#include "runtime/data/dataset_builder.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"
#include "tests/support/graph_builder.hpp"

#include <Eigen/Cholesky>
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

using namespace vbn;
using inference::Rng;

std::size_t sz(int i) { return static_cast<std::size_t>(i); }

struct Problem {
    ir::Graph graph;
    Dataset data;
};

Problem unimodal(int d, long rows, std::uint64_t seed) {
    Problem p;
    p.graph = compile_model(fmt::format("node x[{}] ~ bernoulli(0.5);\n"
                                        "node y ~ logistic(0.5 + w * x);\n"
                                        "w ~ normal(0, 10);\n",
                                        d),
                            "unimodal.vbn");
    p.data = test::unimodal_data(p.graph, d, rows, seed);
    return p;
}

// Forward samples of a model whose roots are the only binary nodes without a block.
Problem simulated(const std::string& text, const std::vector<double>& theta, long rows, std::uint64_t seed) {
    Problem p;
    p.graph = compile_model(text, "model.vbn");
    const ir::Graph& g = p.graph;
    const Eigen::Map<const Eigen::VectorXd> th(theta.data(), static_cast<Eigen::Index>(theta.size()));
    Rng rng(seed);
    DatasetBuilder b(g, "simulated");
    std::vector<double> x(g.elements.size());
    std::vector<std::int8_t> row;
    for (long t = 0; t < rows; ++t) {
        for (int e : g.topological_order) x[sz(e)] = rng.bernoulli(inference::inv_logit(test::eta_of(g, e, x, th))) ? 1 : -1;
        row.clear();
        for (std::size_t e = 0; e < g.elements.size(); ++e)
            if (!g.elements[e].hidden) row.push_back(static_cast<std::int8_t>(x[e]));
        b.add_coded_row(row, {});
    }
    p.data = b.finish();
    return p;
}

void report(benchmark::State& state, const VbResult& r) {
    const VbFit& f = r.best_fit();
    state.counters["em_iterations"] = f.iterations;
    state.counters["elbo"] = f.elbo;
    state.counters["converged"] = f.converged;
}

void BM_VbUnimodal(benchmark::State& state) {
    const int d = static_cast<int>(state.range(0));
    const Problem p = unimodal(d, 1000, 51);
    VbResult r;
    for (auto _ : state) {
        r = variational(p.graph, p.data);
        benchmark::DoNotOptimize(r.fits.data());
    }
    state.counters["patterns"] = p.data.patterns;
    report(state, r);
}
BENCHMARK(BM_VbUnimodal)->Arg(1)->Arg(5)->Arg(10)->Arg(20)->Arg(50)->Unit(benchmark::kMillisecond);

void BM_VbMultimodal(benchmark::State& state) {
    const Problem p = simulated("node h hidden ~ bernoulli(0.6); node o ~ bernoulli(0.5);\n"
                                "node y ~ logistic(2 + w * [h, o]); w ~ normal(3, sqrt(10));\n",
                                {2, -1}, 50, 52);
    VbResult r;
    for (auto _ : state) {
        r = variational(p.graph, p.data);
        benchmark::DoNotOptimize(r.fits.data());
    }
    report(state, r);
}
BENCHMARK(BM_VbMultimodal)->Unit(benchmark::kMillisecond);

// One random start (restart 1: restart 0 sits on the symmetric saddle of this model).
void BM_VbSbn(benchmark::State& state) {
    Rng rng(38);
    std::vector<double> theta(32);
    for (double& v : theta) v = 2 * rng.normal();
    const Problem p = simulated("node h[3] hidden ~ bernoulli(0.5); node v[8] ~ logistic(b + W * h);\n"
                                "b ~ normal(0, sqrt(10)); W ~ normal(0, sqrt(10));\n",
                                theta, 1000, 39);
    VbResult r;
    for (auto _ : state) {
        r = variational(p.graph, p.data, VbOptions{.restarts = 2});
        benchmark::DoNotOptimize(r.fits.data());
    }
    state.counters["patterns"] = p.data.patterns;
    report(state, r);
}
BENCHMARK(BM_VbSbn)->Unit(benchmark::kMillisecond);

struct Reference {
    Eigen::VectorXd mean, sd;
    double ess = 0;
};

// Self-normalised importance sampling of the exact posterior with a t_10 proposal.
Reference importance(const Target& target, const Eigen::VectorXd& centre, const Eigen::MatrixXd& cov, double widen,
                     long draws, std::uint64_t seed) {
    auto ws = target.make_workspace();
    inference::GaussianProposal q(centre, cov, 10.0);
    q.inflate(widen * widen);
    Rng rng(seed);
    const int d = target.dim();
    Eigen::MatrixXd theta(d, draws);
    Eigen::VectorXd logw(draws);
    Eigen::VectorXd x(d);
    for (long i = 0; i < draws; ++i) {
        q.sample(rng, x);
        theta.col(i) = x;
        logw[i] = target.log_density(x, ws) - q.log_density(x);
    }
    const Eigen::VectorXd w = (logw.array() - logw.maxCoeff()).exp();
    const double sum = w.sum();
    Reference r;
    r.mean = theta * w / sum;
    const Eigen::VectorXd second = theta.array().square().matrix() * w / sum;
    r.sd = (second - r.mean.cwiseProduct(r.mean)).cwiseSqrt();
    r.ess = sum * sum / w.squaredNorm();
    return r;
}

double mean_error(const Eigen::VectorXd& mean, const Reference& ref) {
    return ((mean - ref.mean).array().abs() / ref.sd.array()).maxCoeff();
}
double sd_error(const Eigen::MatrixXd& cov, const Reference& ref) {
    return (cov.diagonal().cwiseSqrt().array() / ref.sd.array() - 1.0).abs().maxCoeff();
}

// The fully observed fixed point written out again from the papers' update equations
// (Variational MCMC, Fig. 3; JJ eq. 10–12), run until ξ stops changing: a check that the
// VB numbers below are the method's and not the implementation's.
Eigen::VectorXd plain_jj_mean(const Target& target) {
    const CompleteFamily& cf = target.complete_family(0);
    const int d = target.dim();
    const Eigen::MatrixXd prior_precision = Eigen::MatrixXd::Identity(d, d) / 100.0;  // N(0, 10²)
    Eigen::VectorXd xi = Eigen::VectorXd::Zero(cf.patterns());
    Eigen::VectorXd mu = Eigen::VectorXd::Zero(d);
    for (int it = 0; it < 100000; ++it) {
        Eigen::MatrixXd precision = prior_precision;
        Eigen::VectorXd h = Eigen::VectorXd::Zero(d);
        for (int t = 0; t < cf.patterns(); ++t) {
            const double lam = inference::jj_lambda(xi[t]);
            const Eigen::VectorXd f = cf.f.row(t).transpose();
            precision += 2 * cf.w[t] * lam * f * f.transpose();
            h += cf.w[t] * (cf.y[t] / 2 - 2 * lam * cf.a[t]) * f;
        }
        const Eigen::LLT<Eigen::MatrixXd> llt(precision);
        mu = llt.solve(h);
        const Eigen::MatrixXd sigma = llt.solve(Eigen::MatrixXd::Identity(d, d));
        double change = 0;
        for (int t = 0; t < cf.patterns(); ++t) {
            const Eigen::VectorXd f = cf.f.row(t).transpose();
            const double e = cf.a[t] + f.dot(mu);
            const double next = std::sqrt(e * e + f.dot(sigma * f));
            change = std::max(change, std::abs(next - xi[t]));
            xi[t] = next;
        }
        if (change < 1e-12) break;
    }
    return mu;
}

// The reference proposal is centred on the exact mode with the Laplace covariance widened
// by 1.1 (the VB fit is too narrow at large d to serve: see vb_proposal_ess).
void BM_VbAccuracy(benchmark::State& state) {
    const int d = static_cast<int>(state.range(0));
    const long draws = state.range(1);
    const Problem p = unimodal(d, 1000, 51);
    const Target target(p.graph, p.data);
    VbFit fit;
    NewtonMode lap;
    Reference ref, via_vb;
    for (auto _ : state) {
        fit = variational(p.graph, p.data).best_fit();
        lap = posterior_mode(target, fit.mean);
        ref = importance(target, lap.mode, lap.cov, 1.1, draws, 7);
        via_vb = importance(target, fit.mean, fit.dense_cov(), 1.2, draws, 8);
    }
    state.counters["ess"] = ref.ess;
    state.counters["ref_mcse_sd"] = 1.0 / std::sqrt(ref.ess);
    state.counters["vb_mean_err_sd"] = mean_error(fit.mean, ref);
    state.counters["vb_sd_err"] = sd_error(fit.dense_cov(), ref);
    state.counters["vb_sd_ratio_min"] = (fit.variances().cwiseSqrt().array() / ref.sd.array()).minCoeff();
    state.counters["laplace_mean_err_sd"] = mean_error(lap.mode, ref);
    state.counters["laplace_sd_err"] = sd_error(lap.cov, ref);
    state.counters["vb_proposal_ess"] = via_vb.ess;
    state.counters["vb_vs_plain_jj"] = (fit.mean - plain_jj_mean(target)).lpNorm<Eigen::Infinity>();
    // The importance correction `vbn vb` reports (runtime/variational/vb_refine.hpp), default options.
    const RefinedPosterior corrected = refine(target, fit);
    state.counters["corrected_mean_err_sd"] = mean_error(corrected.mean, ref);
    state.counters["corrected_sd_err"] = sd_error(corrected.cov, ref);
    state.counters["corrected_k_hat"] = corrected.pareto_k;
}
BENCHMARK(BM_VbAccuracy)
    ->Args({1, 200000})
    ->Args({5, 200000})
    ->Args({10, 200000})
    ->Args({20, 200000})
    ->Args({50, 200000})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
