// The variational job (`vbn vb`, vbn::api::variational): variational EM from one or more
// starts, then, where the exact posterior can be built, its importance correction
// (runtime/variational/vb_refine.hpp), which also estimates the log evidence.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/services/callbacks.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"

#include <functional>
#include <memory>
#include <optional>

namespace vbn::services {

struct VariationalSettings {
    VbOptions vb;              // restarts, tolerance, iteration cap, seed of the restarts
    bool correct = true;       // run the importance correction after EM
    // Its draws, seed and threads; the restarts run side by side on as many threads (at least
    // vb.threads) unless the data are large (Dataset::large).
    RefineOptions correction;
    // The last fallback of RefineOptions::Temper::when_needed: where neither the importance
    // weights (k̂ ≥ 0.7) nor tempering (stopped at its budget, or runs that disagree) can be
    // trusted, the exact posterior is sampled as `vbn fit` does at its defaults (method auto,
    // 4 chains of 1,000 draws after 1,000 warmup, the draws relabelled to one labeling; the
    // correction's seed and threads, vb's restarts), and the chains' draws are the corrected
    // answer (RefinedPosterior::sampled). Not on large or sharded data (their rows are not
    // kept for a second target): there, and when off, the flagged answer stands.
    bool sample_when_unreliable = true;
    // The rows sharded (services/sharded.hpp, `vbn vb --shards`): the data given are shard 0's,
    // EM runs through sharded_variational over every shard, and the correction's target sums
    // every shard's terms through `sharded`.
    std::shared_ptr<const RemoteLikelihood> sharded;
    std::function<VbResult(const VbOptions&)> sharded_variational;
};

struct VariationalRun {
    VbResult result;                            // every restart; best_fit() is the one used
    std::optional<RefinedPosterior> corrected;  // absent without correction, or where it cannot run
};

// Throws vbn::Error (usage, data, inference; cancelled when callbacks.interrupt is set before
// the first restart finished). Interrupted later, it returns the restarts finished so far
// (result.interrupted, best_fit() the best of them) without the correction.
// Where the correction cannot run (no parameters, too many for its dense Hessian, or too
// many unobserved values to sum out) callbacks.log says why and the run has none.
VariationalRun variational(const ir::Graph& graph, const Dataset& data, const VariationalSettings& settings,
                           const Callbacks& callbacks = {});
// The same, handed the data: on large data (Dataset::large), where the target comes first
// and the fit runs on its families, their values are dropped once the target is built.
VariationalRun variational(const ir::Graph& graph, Dataset&& data, const VariationalSettings& settings,
                           const Callbacks& callbacks = {});

}  // namespace vbn::services
