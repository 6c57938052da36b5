#include "tools/vbn/sharded.hpp"

#include "inference/clock.hpp"
#include "runtime/distributed/communicator.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/system.hpp"

#include <chrono>
#include <streambuf>
#include <utility>

namespace vbn::commands {

namespace {

// Discards what is written to it: the output of every MPI rank but 0.
class NullBuffer : public std::streambuf {
protected:
    int overflow(int c) override { return c; }
};

}  // namespace

int run_sharded(const std::string& model, const std::string& data, const services::ShardSettings& settings,
                std::ostream& out, std::ostream& err, const std::function<void()>& check, const ShardedJob& job) {
    BlockedInterrupts signals;  // before MPI starts its threads
    const distributed::MpiSession mpi;
    NullBuffer nothing;
    std::ostream silent(&nothing);
    const bool rank0 = distributed::MpiSession::rank() == 0;
    if (rank0) signals.watch();
    std::ostream& o = rank0 ? out : silent;
    std::ostream& e = rank0 ? err : silent;
    return guarded(e, [&] {
        if (check) check();
        const auto started = std::chrono::steady_clock::now();
        ir::Graph graph = load_model_printing(model, e);
        LoadNotes notes;
        services::ShardedData s = services::load_sharded(graph, data, settings, &notes);
        if (!s.rank0()) {
            services::serve_shards(s, graph);
            return s.go ? 0 : 1;
        }
        print_notes(notes.notices, e);
        Loaded l{std::move(graph), std::move(s.shard0)};
        return job(l, s, o, e, inference::seconds_since(started));
    });
}

}  // namespace vbn::commands
