// The data's rows sharded over MPI ranks for the fit job (`vbn fit --shards K` under mpirun;
// runtime/distributed/): every rank reads the CSV and keeps only its shards' rows, each as a
// target of its own; then the ranks agree that each loaded its rows and read the same model.
// Rank 0 goes on with fit() on shard 0's rows and the remote likelihood of all the shards
// (FitOptions::sharded); every other rank serves rank 0's evaluations until rank 0 is done.
//
//   services::ShardedData s = services::load_sharded(graph, csv, {K, max_enumerated, threads, chains}, &notes);
//   if (!s.rank0()) { services::serve_shards(s, graph); return; }
//   settings.sharded = s.remote;  settings.sharded_variational = services::variational_over(s, graph);
//   settings.shards = K;  services::fit(graph, std::move(s.shard0), settings, …);
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/distributed/communicator.hpp"
#include "runtime/distributed/sharded_likelihood.hpp"
#include "runtime/variational/vb.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vbn::services {

struct ShardSettings {
    int shards = 1;          // K: data row i goes to shard i mod K
    int max_enumerated = 12; // as FitOptions::max_enumerated
    int threads = 1;         // threads each rank evaluates its shards on
    int channels = 1;        // evaluations at once (rank 0's chains side by side), where MPI allows
    // channels 0: rank 0's cores over the number of ranks (at least 1), with one thread each
    // (threads is then ignored): what `vbn vb --shards` uses for its correction's threads.
};

struct ShardedData {
    std::unique_ptr<distributed::Communicator> comm;
    std::unique_ptr<distributed::LocalShards> shards;    // this rank's
    std::vector<std::unique_ptr<distributed::Communicator>> channels;  // other ranks: what serve_shards serves
    std::shared_ptr<distributed::ShardedLikelihood> remote;  // rank 0: every rank's shards; stops the others when destroyed
    Dataset shard0;        // rank 0: shard 0's rows, as fit() reads them
    bool go = true;        // other ranks: false where rank 0 reported an error and the run ends
    bool rank0() const { return comm->rank() == 0; }
};

// Loads this rank's shards of `csv` (load_csv_shards) and builds their targets. On rank 0,
// throws what failed on any rank (naming the rank); elsewhere, an error ends with go = false.
ShardedData load_sharded(const ir::Graph& graph, const std::string& csv, const ShardSettings& settings, LoadNotes* notes);

// Ranks other than 0: evaluates this rank's shards for rank 0, and joins in its variational
// fits, until it is done.
void serve_shards(ShardedData& data, const ir::Graph& graph);

// Rank 0: the variational fit over every rank's shards (vbn::variational on ShardedFamilies),
// for FitOptions::sharded_variational; the other ranks join in from serve_shards. `data` and
// `graph` (the one the shards were loaded with, or an equal copy) must outlive the function
// returned.
std::function<VbResult(const VbOptions&)> variational_over(ShardedData& data, const ir::Graph& graph);

}  // namespace vbn::services
