// The gibbs method's cost per iteration (one sweep over the unobserved values and one
// Laplace block MH move of every block), on the multimodal example (50 rows, one hidden
// value each, 2 weights) and on examples/wide (60 rows, 14 hidden values each linked
// through two observed children, 2 biases: over the exact target's limit). ESS per second
// of whole `vbn fit` runs is in docs/methods.md.
#include "runtime/data/csv.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/sampling/gibbs.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

namespace {

using namespace vbn;

void gibbs_iteration(benchmark::State& bm, const std::string& model, const std::string& data) {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/";
    const ir::Graph g = load_model(dir + model);
    const Dataset d = load_csv(g, dir + data);
    const auto target = make_complete_data_target(g, d);
    const VbFit q = variational(g, target->families()).best_fit();
    GibbsModel gm(g, *target);
    GibbsDensity density(gm);
    HiddenGibbs sweep;
    ConditionalLaplaceMH theta_move(q.mean, 10, 1.0);
    inference::Rng rng(1, 0);
    inference::State state{q.mean, density.log_density(q.mean)};
    inference::TransitionInfo info;
    for (int i = 0; i < 100; ++i) {  // past the start
        sweep.step(state, density, rng, info);
        theta_move.step(state, density, rng, info);
    }
    for (auto _ : bm) {
        sweep.step(state, density, rng, info);
        theta_move.step(state, density, rng, info);
        benchmark::DoNotOptimize(state.lp);
    }
    bm.counters["hidden_values"] = static_cast<double>(gm.hidden_values());
}

void BM_GibbsMultimodal(benchmark::State& bm) { gibbs_iteration(bm, "paper/multimodal.vbn", "paper/multimodal.csv"); }
void BM_GibbsWide(benchmark::State& bm) { gibbs_iteration(bm, "wide/wide.vbn", "wide/wide.csv"); }

BENCHMARK(BM_GibbsMultimodal)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GibbsWide)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
