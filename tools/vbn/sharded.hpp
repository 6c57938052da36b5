// A command over rows sharded among MPI ranks (`--shards K`; docs/mpi.md): MPI started with the
// interrupt signals blocked, every rank loading its own shards, and rank 0 alone writing
// anything. Rank 0 runs the job on the loaded shards; every other rank serves it until it ends.
#pragma once

#include "runtime/services/sharded.hpp"
#include "tools/vbn/console.hpp"

#include <functional>
#include <ostream>
#include <string>

namespace vbn::commands {

// Rank 0's part: the model and shard 0's rows (`l`), every rank's shards (`s`, whose remote
// likelihood tells the other ranks to stop when it is destroyed), rank 0's streams, and the
// seconds the loading took. Returns the exit status.
using ShardedJob = std::function<int(Loaded& l, services::ShardedData& s, std::ostream& out, std::ostream& err,
                                     double load_seconds)>;

// `check` runs first on every rank (a usage error there ends them all alike). Returns the exit
// status: the job's on rank 0; elsewhere 0, or 1 where rank 0 reported an error.
int run_sharded(const std::string& model, const std::string& data, const services::ShardSettings& settings,
                std::ostream& out, std::ostream& err, const std::function<void()>& check, const ShardedJob& job);

}  // namespace vbn::commands
