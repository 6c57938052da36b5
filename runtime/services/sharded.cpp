#include "runtime/services/sharded.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace vbn::services {

ShardedData load_sharded(const ir::Graph& graph, const std::string& csv, const ShardSettings& settings, LoadNotes* notes) {
    ShardedData out;
    out.comm = distributed::world();
    const distributed::ShardPlan plan{settings.shards, out.comm->size(), out.comm->rank()};
    distributed::check_plan(plan);  // the same on every rank: each throws it alike
    // Channels only where the MPI library lets threads call it at once; the ranks compare the
    // number (in the fingerprint), as each must serve as many as rank 0 uses.
    const int channels = out.comm->concurrent() ? std::max(1, settings.channels) : 1;
    // Everything that can fail before the ranks start talking is caught here and told to rank
    // 0, so that no rank waits for one that has given up.
    std::string error;
    std::exception_ptr own;
    try {
        std::vector<Dataset> data = load_csv_shards(graph, csv, settings.shards, plan.first(), plan.last(), notes);
        out.shards = std::make_unique<distributed::LocalShards>(graph, data, plan, settings.max_enumerated,
                                                                settings.threads, channels);
        if (plan.rank == 0) out.shard0 = std::move(data.front());
    } catch (const std::exception& e) {
        error = e.what();
        own = std::current_exception();
    }
    const std::string fingerprint = fmt::format("{}; {} channel{}", distributed::model_fingerprint(graph), channels,
                                                channels == 1 ? "" : "s");
    out.go = distributed::agree(*out.comm, error, fingerprint);
    if (own && plan.rank == 0) std::rethrow_exception(own);
    if (!out.go) return out;
    out.channels = out.comm->copies(channels);
    if (plan.rank == 0) out.remote = std::make_shared<distributed::ShardedLikelihood>(*out.shards, std::move(out.channels));
    return out;
}

void serve_shards(ShardedData& data) {
    if (data.go && !data.rank0()) distributed::serve(*data.shards, data.channels);
}

}  // namespace vbn::services
