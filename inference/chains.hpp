// Running several Markov chains of one kernel, in parallel and reproducibly.
//
// Chain c draws from its own random stream Rng(seed, chain_stream_offset + c), owns its own
// Density (from the factory) and its own clone of the prototype kernel, so its draws depend on
// (seed, c) and nothing else: the results are bit-for-bit the same whatever `threads` is.
// Output and progress never live inside a kernel; the runner reports through callbacks.
//
//   ChainSettings s;  s.seed = 42;
//   auto results = run_chains(factory, Mixture(0.5, block_mh, block_rwm), inits, s);
//
// Per chain: warmup iterations (the kernel adapts between begin_warmup and end_warmup), then
// `draws` sampling iterations of which every thin-th is kept, then as many more as
// ChainCallbacks::extend asks for.
#pragma once

#include "inference/density.hpp"
#include "inference/kernel.hpp"

#include <Eigen/Core>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vbn::inference {

// Added to the chain index to form the chain's stream, so a chain never shares a stream with
// other users of the same seed (stream 0, 1, ... for data simulation, initial values, ...).
inline constexpr std::uint64_t chain_stream_offset = 0x4348'4149'4e00ULL;  // "CHAIN\0"

struct ChainSettings {
    int warmup = 1000;        // iterations with adaptation, not kept
    int draws = 1000;         // sampling iterations
    std::uint64_t seed = 0;
    int chains = 4;
    int threads = 2;          // threads, the calling one among them (at most `chains` are used)
    bool keep_draws = true;   // hold draws, lp and transition info in the results
    int thin = 1;             // keep sampling iterations 0, thin, 2 thin, ...
};

// Copies the fields that say how long and how many chains run (warmup, draws, seed, chains,
// threads, keep_draws) between option types that name them alike: ChainSettings, the fit
// options of runtime/sampling/fit.hpp and those of the library API. One copy, so that a field added to
// all of them is passed on everywhere or nowhere.
template <class To, class From>
void copy_chain_settings(const From& from, To& to) {
    to.warmup = from.warmup;
    to.draws = from.draws;
    to.seed = from.seed;
    to.chains = from.chains;
    to.threads = from.threads;
    to.keep_draws = from.keep_draws;
}

struct ChainProgress {
    int chain = 0;
    int iteration = 0;   // iterations done in this phase
    int iterations = 0;  // iterations in this phase
    bool warmup = true;
};

struct ChainResult;

struct ChainCallbacks {
    // Called from the chain's worker thread at most once per `progress_interval` seconds of
    // that chain (by elapsed time), plus once when each phase ends; calls are serialised.
    std::function<void(const ChainProgress&)> progress;
    double progress_interval = 0.5;

    // Called for every kept draw (0-based index among kept draws) from the chain's worker
    // thread: calls for one chain are in order; different chains may call concurrently.
    std::function<void(int chain, int draw, const State& state, const TransitionInfo& info)> on_draw;

    // Checked between iterations from the worker threads (should_stop may be called by several
    // at once); when either says stop, every chain stops after its current iteration and
    // reports what it has.
    const std::atomic<bool>* stop = nullptr;
    std::function<bool()> should_stop;

    // Called on the calling thread once every chain has ended its sampling phase, and again
    // after each extension it asks for, with the results so far: the number of sampling
    // iterations to add to every chain that ended its own without failing or being stopped
    // (0 ends the run). An extension continues each chain where it stopped (its state, its
    // kernel as adapted, its random stream), so a run of d draws extended by m is, draw for
    // draw, the run of d + m draws. Kept draws are numbered on from d.
    std::function<int(const std::vector<ChainResult>&)> extend;

    // Coordinates the state holds as the log of a positive parameter (a learned scale): kept
    // draws hold exp of them, the parameter itself. on_draw gets the state as it is.
    std::vector<int> log_coordinates;

    // How failure messages name coordinate i of the state (e.g. "W[2,3]"); unset, they give
    // the 0-based index. Messages number chains from 1, as users and CmdStan's chain_id do.
    std::function<std::string(int i)> parameter_name;
};

struct ChainResult {
    int chain = 0;
    Eigen::MatrixXd draws;                // draws_done × dim (0 rows unless keep_draws)
    Eigen::VectorXd lp;                   // log density of each kept draw
    std::vector<TransitionInfo> info;     // each kept draw's transition
    std::vector<KernelStats> stats;       // sampling phase only, one per leaf kernel
    std::vector<KernelStats> warmup_stats;
    double warmup_seconds = 0;
    double sampling_seconds = 0;
    int warmup_done = 0;                  // warmup iterations completed
    int iterations_done = 0;              // sampling iterations completed (kept or thinned out)
    int draws_done = 0;                   // kept draws
    bool interrupted = false;             // stopped on request before the end
    std::string error;                    // non-empty if the chain failed: what and where
    State last;                           // the final state (for continuing a run)

    bool ok() const { return error.empty(); }
};

// Runs settings.chains chains. inits holds one initial point per chain, or one for all.
// Throws std::invalid_argument for invalid settings or initial points of the wrong size;
// failures during a chain (a non-finite log density at the current state, an exception from
// the density or kernel) end that chain and are reported in its ChainResult::error.
std::vector<ChainResult> run_chains(const DensityFactory& factory, const Kernel& prototype,
                                    const std::vector<Eigen::VectorXd>& inits, const ChainSettings& settings,
                                    const ChainCallbacks& callbacks = {});

}  // namespace vbn::inference
