#include "runtime/services/sharded.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <exception>
#include <thread>
#include <utility>

namespace vbn::services {

namespace {

// A variational fit's options as rank 0 sends them to the others (cancel and on_restart stay
// on rank 0, which stops every rank through the fit's own exchanges).
std::vector<std::int64_t> encode(const VbOptions& o) {
    return {static_cast<std::int64_t>(o.seed), o.restarts, o.max_iterations, o.mean_field_sweeps,
            o.keep_finished_on_cancel ? 1 : 0, std::bit_cast<std::int64_t>(o.tolerance), o.accelerate ? 1 : 0};
}

VbOptions decode(const std::vector<std::int64_t>& a) {
    if (a.size() != 7) throw Error(ErrorKind::usage, fmt::format("rank 0 sent {} options for a variational fit", a.size()));
    VbOptions o;
    o.seed = static_cast<std::uint64_t>(a[0]);
    o.restarts = static_cast<int>(a[1]);
    o.max_iterations = static_cast<int>(a[2]);
    o.mean_field_sweeps = static_cast<int>(a[3]);
    o.keep_finished_on_cancel = a[4] != 0;
    o.tolerance = std::bit_cast<double>(a[5]);
    o.accelerate = a[6] != 0;
    return o;
}

ShardedFamilies rows_of(const ShardedData& data, distributed::Communicator& comm) {
    const distributed::ShardPlan& plan = data.shards->plan();
    return {data.shards->families(), plan.first(), plan.shards, &comm};
}

}  // namespace

ShardedData load_sharded(const ir::Graph& graph, const std::string& csv, const ShardSettings& settings, LoadNotes* notes) {
    ShardedData out;
    out.comm = distributed::world();
    const distributed::ShardPlan plan{settings.shards, out.comm->size(), out.comm->rank()};
    distributed::check_plan(plan);  // the same on every rank: each throws it alike
    // Channels only where the MPI library lets threads call it at once; the ranks compare the
    // number (in the fingerprint), as each must serve as many as rank 0 uses. The automatic
    // number is rank 0's, broadcast whatever each rank asks, so that every command makes the
    // same calls.
    std::int64_t automatic = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::thread::hardware_concurrency()) /
                                                           out.comm->size());
    out.comm->broadcast(&automatic, 1);
    const int asked = settings.channels == 0 ? static_cast<int>(automatic) : settings.channels;
    const int channels = out.comm->concurrent() ? std::max(1, asked) : 1;
    const int threads = settings.channels == 0 ? channels : settings.threads;
    // Everything that can fail before the ranks start talking is caught here and told to rank
    // 0, so that no rank waits for one that has given up.
    std::string error;
    std::exception_ptr own;
    try {
        std::vector<Dataset> data = load_csv_shards(graph, csv, settings.shards, plan.first(), plan.last(), notes);
        out.shards = std::make_unique<distributed::LocalShards>(graph, data, plan, settings.max_enumerated,
                                                                threads, channels);
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

void serve_shards(ShardedData& data, const ir::Graph& graph) {
    if (!data.go || data.rank0()) return;
    distributed::serve(*data.shards, data.channels,
                       [&data, &graph](distributed::Communicator& comm, const std::vector<std::int64_t>& a) {
                           variational(graph, rows_of(data, comm), decode(a));
                       });
}

std::function<VbResult(const VbOptions&)> variational_over(ShardedData& data, const ir::Graph& graph) {
    return [&data, &graph](const VbOptions& o) {
        VbResult r;
        data.remote->run_together(encode(o), [&](distributed::Communicator& comm) {
            r = variational(graph, rows_of(data, comm), o);
        });
        return r;
    };
}

}  // namespace vbn::services
