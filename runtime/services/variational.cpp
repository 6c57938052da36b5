#include "runtime/services/variational.hpp"

#include "inference/parallel.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/target/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

namespace vbn::services {

namespace {

// The exact target for the importance correction, or nothing when it cannot be built (a
// summed-out group too large to enumerate: the VB fit alone is then reported), with a note.
// data_read: TargetOptions::data_read.
std::optional<Target> correction_target(const ir::Graph& graph, const Dataset& data, const Callbacks& cb,
                                        std::function<void()> data_read = {}) {
    if (graph.dim == 0) return std::nullopt;  // no parameters: nothing to correct
    if (graph.dim > max_dense_dim) {
        cb.note(fmt::format("no importance correction: its Newton step needs a dense {0} x {0} Hessian, too large for {0} "
                            "parameters (at most {1}); the numbers below are the raw variational fit",
                            graph.dim, max_dense_dim));
        return std::nullopt;
    }
    std::optional<Target> target;
    try {
        target.emplace(graph, data, TargetOptions{.data_read = std::move(data_read)});
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;
        cb.note(std::string("no importance correction (it needs the exact posterior): ") + e.what());
        cb.note("the numbers below are the raw variational fit");
    }
    return target;
}

// The importance correction of the VB fit on the target.
RefinedPosterior correct(const Target& target, const VbFit& q, const RefineOptions& ro, const Callbacks& cb) {
    RefineOptions o = ro;
    o.interrupt = cb.interrupt;
    o.note = [&cb](const std::string& message) { cb.note(message); };
    return refine(target, q, o);
}

// Why the correction's answer cannot be trusted, for the note before sampling.
std::string unreliable_because(const RefinedPosterior& r) {
    if (r.tempered) return fmt::format("tempering's runs disagree, R-hat {:.3f}", r.runs_rhat);
    if (!r.tempering_stopped.empty()) return fmt::format("importance k-hat {:.2f}, and {}", r.pareto_k, r.tempering_stopped);
    return fmt::format("importance k-hat {:.2f}", r.pareto_k);
}

// The sampled correction (VariationalSettings::sample_when_unreliable; docs/methods.md, "The
// sampled correction"). The chains' draws, relabelled to one labeling where the posterior
// has several, are in θ's layout with τ for each learned scale: the answer takes log τ, as
// θ holds. Interrupted, it throws ErrorKind::cancelled and the VB fit stands alone.
void correct_by_sampling(const ir::Graph& graph, const Dataset& data, const Target& target, const VariationalSettings& settings,
                         const VbOptions& vo, const VbResult& fitted, const Callbacks& cb, RefinedPosterior& r) {
    const auto start = std::chrono::steady_clock::now();
    cb.note(fmt::format("the corrected numbers cannot be trusted ({}): sampling the exact posterior as vbn fit does instead",
                        unreliable_because(r)));
    // The chains start from the variational fit made already (and warned about: warn_idle).
    FitOptions fo;
    fo.vb = vo;
    fo.variational = std::make_shared<const VbResult>(fitted);
    fo.seed = settings.correction.seed;
    fo.threads = inference::threads_or_cores(settings.correction.threads);
    fo.max_draws = default_max_draws;  // run on while short of ESS, as `vbn fit` without --draws
    const FitRun run = fit(graph, data, fo, cb);
    if (run.interrupted) throw Error(ErrorKind::cancelled, "interrupted while sampling the correction");
    std::vector<Eigen::MatrixXd> chains;
    for (const inference::ChainResult& c : run.result.chains) {
        if (!c.ok() || c.draws.rows() == 0) continue;
        Eigen::MatrixXd x = c.draws;
        for (const ir::Scale& sc : graph.scales) x.col(sc.theta_index) = x.col(sc.theta_index).array().log();
        chains.push_back(std::move(x));
    }
    take_sampled(target, chains, r);
    r.sampled_method = run.result.method;
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The warning for hidden nodes the best fit leaves idle (idle_hidden_warning).
void warn_idle(const ir::Graph& graph, const VbResult& result, const Callbacks& callbacks) {
    if (result.fits.empty()) return;
    const std::string w = idle_hidden_warning(graph, result.best_fit(), static_cast<int>(result.fits.size()));
    if (!w.empty()) callbacks.warning(w);
}

// The rows sharded: EM over every shard, then the correction on shard 0's target with every
// shard's terms.
VariationalRun sharded_run(const ir::Graph& graph, const Dataset& data, const VariationalSettings& settings,
                           const Callbacks& callbacks, const VbOptions& vo) {
    if (!settings.sharded_variational)
        throw Error(ErrorKind::usage, "sharded rows need both the remote likelihood and the variational fit over the shards");
    VariationalRun run;
    run.result = settings.sharded_variational(vo);
    warn_idle(graph, run.result, callbacks);
    if (!settings.correct || run.result.interrupted) return run;
    std::optional<Target> target = correction_target(graph, data, callbacks);
    if (!target) return run;
    target->set_remote(settings.sharded);
    try {
        run.corrected = correct(*target, run.result.best_fit(), settings.correction, callbacks);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::cancelled) throw;
        run.result.interrupted = true;
    }
    return run;
}

VariationalRun variational_run(const ir::Graph& graph, const Dataset& data, const VariationalSettings& settings,
                               const Callbacks& callbacks, Dataset* handed) {
    VbOptions vo = settings.vb;
    if (callbacks.interrupt) vo.cancel = callbacks.interrupt;
    vo.keep_finished_on_cancel = true;
    if (settings.sharded) return sharded_run(graph, data, settings, callbacks, vo);
    // The restarts run side by side on the correction's threads (the fits do not depend on
    // it), except on large data, where each restart's q(h) and ξ per row would multiply the
    // memory (as `vbn fit` does).
    if (!data.large()) vo.threads = std::max(vo.threads, inference::threads_or_cores(settings.correction.threads));
    VariationalRun run;
    // On large data the target comes first and the fit runs on its families (Dataset::large);
    // otherwise the fit builds its own, and the target follows for the correction.
    std::optional<Target> target;
    const bool target_first = settings.correct && data.large();
    // The fit and the correction then read the target's copy of the data: data handed over
    // are dropped once it has read them.
    std::function<void()> data_read;
    if (handed) data_read = [handed] { handed->drop_values(); };
    if (target_first) target = correction_target(graph, data, callbacks, std::move(data_read));
    run.result = target ? vbn::variational(graph, target->families(), vo) : vbn::variational(graph, data, vo);
    warn_idle(graph, run.result, callbacks);
    // Interrupted, the best fit so far is the answer: the correction (seconds of work) is skipped.
    if (settings.correct && !run.result.interrupted) {
        try {
            if (!target_first) target = correction_target(graph, data, callbacks);
            if (target) run.corrected = correct(*target, run.result.best_fit(), settings.correction, callbacks);
            if (run.corrected && !run.corrected->reliable() && settings.sample_when_unreliable &&
                settings.correction.temper == RefineOptions::Temper::when_needed) {
                if (target_first)
                    callbacks.note("the corrected numbers cannot be trusted, and on large data they are not sampled "
                                   "again here: run vbn fit");
                else
                    correct_by_sampling(graph, data, *target, settings, vo, run.result, callbacks, *run.corrected);
            }
        } catch (const Error& e) {
            // Interrupted while tempering (which takes longer than sampling) or sampling: the VB
            // fit stands, reported as the uncorrected fit (the flagged answer is not shown).
            if (e.kind() != ErrorKind::cancelled) throw;
            run.result.interrupted = true;
            run.corrected.reset();
        }
    }
    return run;
}

}  // namespace

VariationalRun variational(const ir::Graph& graph, const Dataset& data, const VariationalSettings& settings,
                           const Callbacks& callbacks) {
    return variational_run(graph, data, settings, callbacks, nullptr);
}

VariationalRun variational(const ir::Graph& graph, Dataset&& data, const VariationalSettings& settings,
                           const Callbacks& callbacks) {
    return variational_run(graph, data, settings, callbacks, &data);
}

}  // namespace vbn::services
