#include "runtime/services/variational.hpp"

#include "inference/parallel.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/target/target.hpp"

#include <fmt/format.h>

#include <algorithm>
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
        } catch (const Error& e) {
            // Interrupted while tempering (which takes longer than sampling): the VB fit stands.
            if (e.kind() != ErrorKind::cancelled) throw;
            run.result.interrupted = true;
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
