#include "inference/chains.hpp"

#include "inference/clock.hpp"
#include "inference/parallel.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <mutex>
#include <stdexcept>

namespace vbn::inference {

namespace {

using Clock = std::chrono::steady_clock;

struct ChainJob {
    int chain = 0;
    std::unique_ptr<Density> density;
    std::unique_ptr<Kernel> kernel;
    Eigen::VectorXd init;
    // What an extension continues from: the chain's random stream and the kernel's counters
    // before anything ran and at the end of warmup (the sampling phase's are the rest).
    std::optional<Rng> rng;
    std::vector<KernelStats> before, at_end_of_warmup;
    bool sampling_started = false;
};

// A chain failed: this exception carries a message that already names the place.
struct ChainFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// How messages call parameter i: the caller's name for it, else its 0-based index.
std::string parameter_label(const ChainCallbacks& callbacks, Eigen::Index i) {
    if (callbacks.parameter_name) return callbacks.parameter_name(static_cast<int>(i));
    return fmt::format("{} (0-based)", i);
}

// What is wrong with a state whose log density is not finite, as precisely as we can say:
// a non-finite coordinate, else the first coordinate where the gradient is not finite, else
// the coordinate largest in magnitude (where a density overflows first).
std::string diagnose(const State& state, Density& density, const ChainCallbacks& callbacks) {
    for (Eigen::Index i = 0; i < state.x.size(); ++i) {
        if (!std::isfinite(state.x[i])) return fmt::format("; parameter {} is {}", parameter_label(callbacks, i), state.x[i]);
    }
    try {
        Eigen::VectorXd grad(state.x.size());
        density.log_density_gradient(state.x, grad);
        for (Eigen::Index i = 0; i < grad.size(); ++i) {
            if (!std::isfinite(grad[i]))
                return fmt::format("; its gradient is {} in parameter {}", grad[i], parameter_label(callbacks, i));
        }
    } catch (const std::exception&) {
        // The gradient is only a hint here; the log density itself is what failed.
    }
    if (state.x.size() == 0) return "";
    Eigen::Index largest = 0;
    state.x.cwiseAbs().maxCoeff(&largest);
    return fmt::format("; the largest parameter in magnitude is {} = {}", parameter_label(callbacks, largest), state.x[largest]);
}

class Runner {
public:
    Runner(const ChainSettings& settings, const ChainCallbacks& callbacks) : settings_(settings), callbacks_(callbacks) {}

    void run(ChainJob& job, ChainResult& out) {
        out.chain = job.chain;
        if (!make_room(job, out, settings_.draws)) return;
        job.kernel->collect_stats(job.before);
        job.rng.emplace(settings_.seed, chain_stream_offset + static_cast<std::uint64_t>(job.chain));
        State& state = out.last;
        state.x = job.init;
        guarded(job, out, [&] {
            state.lp = job.density->log_density(state.x);
            check(state, *job.density, job.chain, Where{true, 0});
            warm_up(job, out);
            if (out.interrupted) return;
            job.kernel->end_warmup();
            job.kernel->collect_stats(job.at_end_of_warmup);
            job.sampling_started = true;
            sample(job, out, settings_.draws);
        });
        finish(job, out);
    }

    // `iterations` more sampling iterations of a chain that ended its sampling phase.
    void extend(ChainJob& job, ChainResult& out, int iterations) {
        if (!extendable(job, out) || !make_room(job, out, iterations)) return;
        guarded(job, out, [&] { sample(job, out, iterations); });
        finish(job, out);
    }

    static bool extendable(const ChainJob& job, const ChainResult& out) {
        return job.sampling_started && out.ok() && !out.interrupted;
    }

    bool stop_requested() const {
        return (callbacks_.stop != nullptr && callbacks_.stop->load(std::memory_order_relaxed)) ||
               (callbacks_.should_stop && callbacks_.should_stop());
    }

private:
    struct Throttle {
        Clock::time_point last = Clock::now();
    };

    // Room for the draws kept from `iterations` more sampling iterations, all at once, so that
    // a request too large for memory fails now rather than hours in.
    bool make_room(const ChainJob& job, ChainResult& out, int iterations) {
        if (!settings_.keep_draws) return true;
        const int thin = settings_.thin, from = out.iterations_done;
        const long kept = (static_cast<long>(from) + iterations + thin - 1) / thin - (from + thin - 1) / thin;
        const Eigen::Index dim = job.init.size(), rows = out.draws_done + kept;
        try {
            out.draws.conservativeResize(rows, dim);
            out.lp.conservativeResize(rows);
            out.info.reserve(static_cast<std::size_t>(rows));
            return true;
        } catch (const std::bad_alloc&) {
            out.draws.conservativeResize(out.draws_done, dim);
            out.lp.conservativeResize(out.draws_done);
            out.error = fmt::format(
                "chain {}: not enough memory to keep {} draws of {} parameters (stream them instead, with keep_draws off)",
                job.chain + 1, rows, dim);
            return false;
        }
    }

    // Runs `body`; a failure ends the chain with its message in out.error.
    template <class Body>
    static void guarded(const ChainJob& job, ChainResult& out, Body&& body) {
        try {
            body();
        } catch (const ChainFailure& e) {
            out.error = e.what();
        } catch (const std::exception& e) {
            out.error = fmt::format("chain {}: {}", job.chain + 1, e.what());
        } catch (...) {
            out.error = fmt::format("chain {}: an unknown exception", job.chain + 1);
        }
    }

    void warm_up(ChainJob& job, ChainResult& out) {
        const auto started = Clock::now();
        if (settings_.warmup > 0) job.kernel->begin_warmup(settings_.warmup);
        Throttle throttle;
        for (int i = 0; i < settings_.warmup; ++i) {
            if (stop_requested()) {
                out.interrupted = true;
                break;
            }
            TransitionInfo info;
            iterate(job, out.last, info, Where{true, i + 1});
            out.warmup_done = i + 1;
            report(throttle, {job.chain, i + 1, settings_.warmup, true}, i + 1 == settings_.warmup);
        }
        out.warmup_seconds = seconds_since(started);
    }

    // `iterations` sampling iterations, numbered on from those done; every thin-th is kept.
    void sample(ChainJob& job, ChainResult& out, int iterations) {
        const auto started = Clock::now();
        const int to = out.iterations_done + iterations;  // progress counts an extension on from the draws done
        Throttle throttle;
        for (int i = 0; i < iterations; ++i) {
            if (stop_requested()) {
                out.interrupted = true;
                break;
            }
            TransitionInfo info;
            iterate(job, out.last, info, Where{false, out.iterations_done + 1});
            if (out.iterations_done % settings_.thin == 0) keep(out, out.last, info, job.chain);
            ++out.iterations_done;
            report(throttle, {job.chain, out.iterations_done, to, false}, i + 1 == iterations);
        }
        out.sampling_seconds += seconds_since(started);
    }

    // Drops room left unused (the chain stopped early) and totals the kernel's counters.
    void finish(const ChainJob& job, ChainResult& out) const {
        if (settings_.keep_draws && out.draws_done < out.draws.rows()) {
            out.draws.conservativeResize(out.draws_done, out.draws.cols());
            out.lp.conservativeResize(out.draws_done);
        }
        finish_stats(out, *job.kernel, job.sampling_started ? job.at_end_of_warmup : std::vector<KernelStats>{}, job.before);
    }

    // An iteration, 1-based within its phase; warmup iteration 0 is the initial point.
    struct Where {
        bool warmup = true;
        int iteration = 0;
        std::string text() const {
            if (warmup && iteration == 0) return "at the initial values (iteration 0)";
            return fmt::format("after {} iteration {}", warmup ? "warmup" : "sampling", iteration);
        }
    };

    // One transition; an exception from the kernel or density is rethrown naming the iteration.
    void iterate(ChainJob& job, State& state, TransitionInfo& info, Where where) {
        try {
            job.kernel->step(state, *job.density, *job.rng, info);
        } catch (const std::exception& e) {
            throw ChainFailure(fmt::format("chain {}: {} ({})", job.chain + 1, e.what(), where.text()));
        }
        check(state, *job.density, job.chain, where);
    }

    void check(const State& state, Density& density, int chain, Where where) const {
        if (std::isfinite(state.lp) && state.x.allFinite()) return;
        throw ChainFailure(fmt::format("chain {}: the log density is {} {}{}", chain + 1, state.lp, where.text(),
                                       diagnose(state, density, callbacks_)));
    }

    void keep(ChainResult& out, const State& state, const TransitionInfo& info, int chain) {
        const int k = out.draws_done;
        if (settings_.keep_draws) {
            out.draws.row(k) = state.x.transpose();
            for (int i : callbacks_.log_coordinates) out.draws(k, i) = std::exp(state.x[i]);
            out.lp[k] = state.lp;
            out.info.push_back(info);
        }
        ++out.draws_done;
        if (callbacks_.on_draw) callbacks_.on_draw(chain, k, state, info);
    }

    void report(Throttle& throttle, const ChainProgress& p, bool phase_end) {
        if (!callbacks_.progress) return;
        const auto now = Clock::now();
        if (!phase_end && std::chrono::duration<double>(now - throttle.last).count() < callbacks_.progress_interval) return;
        throttle.last = now;
        const std::lock_guard<std::mutex> lock(progress_mutex_);
        callbacks_.progress(p);
    }

    // Sampling-phase counters are the totals minus those at the end of warmup.
    static void finish_stats(ChainResult& out, const Kernel& kernel, const std::vector<KernelStats>& at_end_of_warmup,
                             const std::vector<KernelStats>& before) {
        std::vector<KernelStats> total;
        kernel.collect_stats(total);
        const std::vector<KernelStats>& split = at_end_of_warmup.empty() ? total : at_end_of_warmup;
        out.warmup_stats = split;
        out.stats = total;
        for (std::size_t i = 0; i < total.size() && i < split.size(); ++i) {
            out.warmup_stats[i].proposed -= i < before.size() ? before[i].proposed : 0;
            out.warmup_stats[i].accepted -= i < before.size() ? before[i].accepted : 0;
            out.stats[i].proposed -= split[i].proposed;
            out.stats[i].accepted -= split[i].accepted;
        }
    }

    const ChainSettings& settings_;
    const ChainCallbacks& callbacks_;
    std::mutex progress_mutex_;
};

void validate(const ChainSettings& s, std::size_t inits) {
    if (s.warmup < 0 || s.draws < 0) {
        throw std::invalid_argument(fmt::format("chains: warmup and draws must be >= 0, got {} and {}", s.warmup, s.draws));
    }
    if (s.chains < 1) throw std::invalid_argument(fmt::format("chains: need at least one chain, got {}", s.chains));
    if (s.threads < 1) throw std::invalid_argument(fmt::format("chains: need at least one thread, got {}", s.threads));
    if (s.thin < 1) throw std::invalid_argument(fmt::format("chains: thin must be >= 1, got {}", s.thin));
    if (inits != 1 && inits != static_cast<std::size_t>(s.chains)) {
        throw std::invalid_argument(
            fmt::format("chains: {} initial points given for {} chains (give one per chain, or one for all)", inits, s.chains));
    }
}

}  // namespace

std::vector<ChainResult> run_chains(const DensityFactory& factory, const Kernel& prototype,
                                    const std::vector<Eigen::VectorXd>& inits, const ChainSettings& settings,
                                    const ChainCallbacks& callbacks) {
    validate(settings, inits.size());

    // Densities and kernels are made here, in order, so factories need not be thread-safe.
    std::vector<ChainJob> jobs(static_cast<std::size_t>(settings.chains));
    for (int c = 0; c < settings.chains; ++c) {
        ChainJob& job = jobs[static_cast<std::size_t>(c)];
        job.chain = c;
        job.density = factory.make();
        if (!job.density) throw std::invalid_argument("chains: the density factory returned nothing");
        job.kernel = prototype.clone();
        job.init = inits[inits.size() == 1 ? 0 : static_cast<std::size_t>(c)];
        if (job.init.size() != job.density->dim()) {
            throw std::invalid_argument(fmt::format("chains: the initial point of chain {} has {} entries but the target has {}",
                                                    c, job.init.size(), job.density->dim()));
        }
    }

    std::vector<ChainResult> results(jobs.size());
    Runner runner(settings, callbacks);
    const int workers = std::min(settings.threads, settings.chains);
    // Work sharing: which thread runs a chain never affects its draws, only when they appear.
    // The calling thread is one of the workers.
    const auto each_chain = [&](const std::function<void(std::size_t c)>& work) {
        if (workers == 1) {
            for (std::size_t c = 0; c < jobs.size(); ++c) work(c);
            return;
        }
        parallel_chunks(workers, jobs.size(), 1, [&](std::size_t c, std::size_t, std::size_t) { work(c); });
    };
    each_chain([&](std::size_t c) { runner.run(jobs[c], results[c]); });
    while (callbacks.extend && !runner.stop_requested()) {
        bool any = false;
        for (std::size_t c = 0; c < jobs.size(); ++c) any = any || Runner::extendable(jobs[c], results[c]);
        if (!any) break;
        const int more = callbacks.extend(results);
        if (more <= 0) break;
        each_chain([&](std::size_t c) { runner.extend(jobs[c], results[c], more); });
    }
    return results;
}

}  // namespace vbn::inference
