// The summary's convergence diagnostics (`diagnose`) for one parameter of 4 chains × 1,000
// draws (and of 4 × 4,000 slowly mixing ones), as `vbn fit` computes them for every parameter
// at the end of a run.
//
// The draws are those of a random-walk Metropolis chain on a normal (autocorrelated, with runs
// of repeated values where moves are rejected), and of a sampler that never repeats a value.
//
// `bench_diagnostics --print` prints the diagnostics of a range of such draws in hexadecimal
// instead, so that a change meant to leave them bit-identical can be checked.
#include "inference/diagnostics.hpp"
#include "inference/rng.hpp"

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

using namespace vbn;

// Random-walk Metropolis on N(mean, 1) with step `step`; step 0 gives independent normals.
Eigen::MatrixXd draws(std::uint64_t seed, Eigen::Index n, Eigen::Index chains, double mean, double step) {
    inference::Rng rng(seed);
    Eigen::MatrixXd x(n, chains);
    for (Eigen::Index c = 0; c < chains; ++c) {
        double v = mean + rng.normal();
        for (Eigen::Index i = 0; i < n; ++i) {
            if (step == 0) {
                v = mean + rng.normal();
            } else {
                const double w = v + step * rng.normal();
                const double log_ratio = 0.5 * ((v - mean) * (v - mean) - (w - mean) * (w - mean));
                if (std::log(rng.uniform()) < log_ratio) v = w;
            }
            x(i, c) = v;
        }
    }
    return x;
}

void BM_Diagnose(benchmark::State& state, double step, Eigen::Index n) {
    const Eigen::MatrixXd x = draws(1, n, 4, 0.7, step);
    for (auto _ : state) benchmark::DoNotOptimize(inference::diagnose(x));
}
BENCHMARK_CAPTURE(BM_Diagnose, metropolis, 2.4, 1000);
BENCHMARK_CAPTURE(BM_Diagnose, independent, 0.0, 1000);
// Chains run on to 4,000 draws because they mix slowly (FitOptions::max_draws), as an
// independence sampler's that sticks now and then: a fresh normal with probability 1 − stay,
// else the value before, so ρ_k = stay^k, and Geyer's sequence runs to tens or hundreds of lags.
Eigen::MatrixXd sticky(std::uint64_t seed, Eigen::Index n, Eigen::Index chains, double stay) {
    inference::Rng rng(seed);
    Eigen::MatrixXd x(n, chains);
    for (Eigen::Index c = 0; c < chains; ++c) {
        double v = rng.normal();
        for (Eigen::Index i = 0; i < n; ++i) {
            if (rng.uniform() >= stay) v = rng.normal();
            x(i, c) = v;
        }
    }
    return x;
}

void BM_DiagnoseSticky(benchmark::State& state, double stay) {
    const Eigen::MatrixXd x = sticky(1, 4000, 4, stay);
    for (auto _ : state) benchmark::DoNotOptimize(inference::diagnose(x));
}
BENCHMARK_CAPTURE(BM_DiagnoseSticky, stay_0_9, 0.9);
BENCHMARK_CAPTURE(BM_DiagnoseSticky, stay_0_97, 0.97);
BENCHMARK_CAPTURE(BM_DiagnoseSticky, stay_0_995, 0.995);

void print_cases() {
    const double steps[] = {0.0, 0.3, 2.4, 50.0};
    const double means[] = {0.0, 0.7, -3.0, 1e6};
    const Eigen::Index lengths[] = {1000, 999, 100, 7, 3000};
    std::uint64_t seed = 1;
    for (const double step : steps)
        for (const double mean : means)
            for (const Eigen::Index n : lengths) {
                const auto d = inference::diagnose(draws(seed++, n, 4, mean, step));
                std::printf("%a %a %a %a %a %a %a %a %a %a %a %d %d\n", d.mean, d.sd, d.q5, d.q50, d.q95, d.mcse_mean,
                            d.mcse_q5, d.mcse_q95, d.ess_bulk, d.ess_tail, d.rhat, d.constant, d.nonfinite);
            }
    // Coarse values (many ties) and a chain stuck at one value.
    Eigen::MatrixXd x = draws(seed, 1000, 4, 0.0, 1.0);
    const auto dc = inference::diagnose((x.array() * 4).round().matrix());
    std::printf("%a %a %a %a\n", dc.ess_bulk, dc.ess_tail, dc.rhat, dc.mcse_q5);
    x.col(2).setConstant(0.25);
    const auto ds = inference::diagnose(x);
    std::printf("%a %a %a %a\n", ds.ess_bulk, ds.ess_tail, ds.rhat, ds.mcse_q5);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--print") == 0) {
        print_cases();
        return 0;
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
