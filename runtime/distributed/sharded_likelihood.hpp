// The data's rows sharded over processes, as Stan's map_rect shares out its jobs: rank 0 runs
// the samplers, and each evaluation of the log-likelihood and its gradient is shared out to
// every rank, each summing its own rows. Jobs that need every rank throughout (the variational
// EM, whose sums each iteration every rank makes) run together through run_together().
//
// Shard k of K holds data rows k, k + K, k + 2K, … (load_csv_shards), and rank r of R holds
// shards r K / R … (r + 1) K / R - 1, each as a Target of its own (its rows' patterns only).
// An evaluation adds the shards' terms in shard order after the prior, whatever the number of
// ranks: a shard's number is computed by the same code from the same rows wherever it is held,
// and the MPI_Allreduce that brings them together adds each shard's slot to zeros only, which
// is exact. So `mpirun -np 1`, `-np 2` and `-np 4` with the same K give the same bits, and the
// same draws (tests/distributed/).
//
// Rank 0's chains evaluate side by side, each exchange on a copy of the communicator (a
// channel) of its own, which each rank serves on a thread of its own.
//
//   rank 0:   ShardedLikelihood remote(shards, channels);  target.set_remote(…);  … ; remote.stop();
//   rank > 0: serve(shards, channels);   // returns once rank 0 calls stop()
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/distributed/communicator.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace vbn::distributed {

struct ShardPlan {
    int shards = 1;
    int ranks = 1;
    int rank = 0;
    // The shards this rank holds: first() … last() - 1.
    int first() const { return static_cast<int>(static_cast<long>(shards) * rank / ranks); }
    int last() const { return static_cast<int>(static_cast<long>(shards) * (rank + 1) / ranks); }
};

// Throws Error(usage) unless 1 ≤ ranks ≤ shards.
void check_plan(const ShardPlan& plan);

// This rank's shards as targets, from the datasets of shards plan.first() … plan.last() - 1,
// by up to `channels` evaluations at once, each on threads / channels threads (at least one;
// each shard's slot is written by one thread, so the numbers do not depend on how many).
class LocalShards {
public:
    LocalShards(const ir::Graph& graph, const std::vector<Dataset>& data, const ShardPlan& plan, int max_enumerated,
                int threads = 1, int channels = 1);
    const ShardPlan& plan() const { return plan_; }
    int dim() const { return dim_; }
    int channels() const { return static_cast<int>(workspaces_.size()); }
    // Slots of every shard (shards × (1 + dim) with the gradient, shards × 1 without), each
    // shard's log-likelihood (then its gradient): this rank's shards written, the rest zero.
    // Evaluations on different channels may run at the same time.
    void evaluate(const Eigen::VectorXd& theta, bool gradient, Eigen::VectorXd& slots, int channel = 0);
    // Slots of every shard for a batch of n = thetas.cols() values (shards × n, shard k's
    // log-likelihoods at k n … k n + n − 1): this rank's shards written, the rest zero.
    void evaluate_batch(const Eigen::MatrixXd& thetas, Eigen::VectorXd& slots, int channel = 0);
    // The weighted patterns of this rank's shards, in shard order (what a variational fit reads).
    std::vector<const Families*> families() const;

private:
    ShardPlan plan_;
    int dim_ = 0;
    int threads_ = 1;
    std::vector<std::unique_ptr<Target>> targets_;
    std::vector<std::vector<Target::Workspace>> workspaces_;  // per channel, per shard
};

// Rank 0's side: every rank's shards' terms, as the remote likelihood of rank 0's target.
// From any thread; as many evaluations at once as there are channels (copies of the
// communicator, one per channel of `local`; each rank serves the same copies).
class ShardedLikelihood final : public RemoteLikelihood {
public:
    ShardedLikelihood(LocalShards& local, std::vector<std::unique_ptr<Communicator>> channels);
    ~ShardedLikelihood() override;
    double value(Eigen::Ref<const Eigen::VectorXd> theta, double* grad) const override;
    // A batch of values in one exchange (Target::log_densities, the importance correction's
    // draws), each shard evaluating the batch at once.
    void values(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Eigen::Ref<Eigen::VectorXd> out) const override;
    // A job that every rank runs at once (a variational fit over the shards): the other ranks
    // get `args` and run serve()'s task with them on one channel's communicator, while this
    // rank runs `job` on the same. Their collectives must match call for call.
    void run_together(const std::vector<std::int64_t>& args, const std::function<void(Communicator&)>& job) const;
    // Ends serve() on the other ranks once no evaluation is running; later evaluations throw.
    // Called by the destructor too.
    void stop();

private:
    struct Channel {
        std::unique_ptr<Communicator> comm;
        Eigen::VectorXd theta, slots, sum;
        Eigen::MatrixXd thetas;
        bool busy = false;
    };
    int acquire() const;
    void release(int c) const;
    // f(channel) on a channel no other evaluation is using, released however f ends.
    template <class F>
    auto on_free_channel(F&& f) const;

    LocalShards& local_;
    mutable std::vector<Channel> channels_;
    mutable std::mutex mutex_;
    mutable std::condition_variable freed_;
    bool stopped_ = false;
};

// What ranks other than 0 run for ShardedLikelihood::run_together, with its args. An error it
// throws is dropped here: rank 0, running the same computation, meets it too and reports it.
using Task = std::function<void(Communicator&, const std::vector<std::int64_t>& args)>;

// Ranks other than 0: evaluates this rank's shards for each request of rank 0, a thread per
// channel, and runs `task` when asked, until rank 0's stop().
void serve(LocalShards& local, std::vector<std::unique_ptr<Communicator>>& channels, const Task& task = {});

// Before any evaluation, every rank's state to rank 0: the error it met loading its shards
// ("" for none) and a fingerprint of its model. Returns whether every rank may go on. On rank 0
// it throws the first other rank's error (naming the rank), or an error where a rank's model
// differs from rank 0's; where rank 0 itself failed it returns false, for its caller to throw
// its own error. The other ranks, on false, end quietly: rank 0 reports why.
bool agree(Communicator& comm, const std::string& error, const std::string& fingerprint);

// The fingerprint agree() compares: the model as `vbn check` describes it (its nodes with their
// predictors and distributions, the parameters with their priors, the blocks), less the first
// line, which names its file.
std::string model_fingerprint(const ir::Graph& graph);

}  // namespace vbn::distributed
