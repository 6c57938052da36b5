#include "runtime/distributed/sharded_likelihood.hpp"

#include "inference/parallel.hpp"
#include "lang/describe.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <sstream>
#include <thread>

namespace vbn::distributed {

namespace {

// What rank 0 asks for, broadcast before each evaluation.
enum Op : std::int64_t { op_stop = 0, op_value = 1, op_gradient = 2, op_task = 3, op_values = 4 };

int stride(int dim, bool gradient) { return gradient ? 1 + dim : 1; }

// One evaluation on every rank at once: this rank's n slots, written by fill(slots) (and, in
// a last entry, 1 where its shards failed), summed over the ranks into `sum`. Returns "" or, on
// rank 0, what failed where.
template <class Fill>
std::string exchange(Communicator& comm, Eigen::Index n, const Fill& fill, Eigen::VectorXd& slots, Eigen::VectorXd& sum) {
    slots.resize(n + 1);
    sum.resize(n + 1);
    std::string failure;
    try {
        fill(slots);
        slots[n] = 0;
    } catch (const std::exception& e) {
        slots.setZero();
        slots[n] = 1;
        failure = e.what();
    }
    comm.allreduce_sum(slots.data(), sum.data(), static_cast<int>(n + 1));
    if (sum[n] == 0) return {};
    const std::vector<std::string> all = comm.gather(failure);
    for (std::size_t r = 0; r < all.size(); ++r)
        if (!all[r].empty()) return fmt::format("rank {}: {}", r, all[r]);
    return {};
}

std::string exchange(LocalShards& local, Communicator& comm, int channel, const Eigen::VectorXd& theta, bool gradient,
                     Eigen::VectorXd& slots, Eigen::VectorXd& sum) {
    const Eigen::Index n = static_cast<Eigen::Index>(local.plan().shards) * stride(local.dim(), gradient);
    return exchange(
        comm, n, [&](Eigen::VectorXd& s) { local.evaluate(theta, gradient, s, channel); }, slots, sum);
}

std::string exchange_batch(LocalShards& local, Communicator& comm, int channel, const Eigen::MatrixXd& thetas,
                           Eigen::VectorXd& slots, Eigen::VectorXd& sum) {
    const Eigen::Index n = static_cast<Eigen::Index>(local.plan().shards) * thetas.cols();
    return exchange(
        comm, n, [&](Eigen::VectorXd& s) { local.evaluate_batch(thetas, s, channel); }, slots, sum);
}

}  // namespace

void check_plan(const ShardPlan& plan) {
    if (plan.shards < 1) throw Error(ErrorKind::usage, fmt::format("--shards must be at least 1, got {}", plan.shards));
    if (plan.ranks > plan.shards)
        throw Error(ErrorKind::usage, fmt::format("{} MPI ranks share {} shard{} of the rows: ask for at least as many "
                                                  "shards as ranks (--shards {})",
                                                  plan.ranks, plan.shards, plan.shards == 1 ? "" : "s", plan.ranks));
}

LocalShards::LocalShards(const ir::Graph& graph, const std::vector<Dataset>& data, const ShardPlan& plan,
                         int max_enumerated, int threads, int channels)
    // The threads are shared among the channels: evaluations side by side on threads of their
    // own each, rather than each asking for all of them.
    : plan_(plan), dim_(graph.dim), threads_(std::max(1, threads / std::max(1, channels))),
      workspaces_(static_cast<std::size_t>(std::max(1, channels))) {
    if (static_cast<int>(data.size()) != plan.last() - plan.first())
        throw Error(ErrorKind::usage, fmt::format("rank {} holds shards {} … {} but was given {} datasets", plan.rank,
                                                  plan.first(), plan.last() - 1, data.size()));
    for (const Dataset& d : data) {
        targets_.push_back(make_target(graph, d, max_enumerated));
        for (auto& w : workspaces_) w.push_back(targets_.back()->make_workspace());
    }
}

void LocalShards::evaluate(const Eigen::VectorXd& theta, bool gradient, Eigen::VectorXd& slots, int channel) {
    std::vector<Target::Workspace>& ws = workspaces_.at(sz(channel));
    const int s = stride(dim_, gradient);
    slots.head(static_cast<Eigen::Index>(plan_.shards) * s).setZero();
    inference::parallel_ranges(threads_, targets_.size(), [&](std::size_t begin, std::size_t end, std::size_t) {
        for (std::size_t i = begin; i < end; ++i) {
            const Eigen::Index at = static_cast<Eigen::Index>(plan_.first() + static_cast<int>(i)) * s;
            slots[at] = gradient ? targets_[i]->log_likelihood_gradient(theta, slots.segment(at + 1, dim_), ws[i])
                                 : targets_[i]->log_likelihood(theta, ws[i]);
        }
    });
}

void LocalShards::evaluate_batch(const Eigen::MatrixXd& thetas, Eigen::VectorXd& slots, int channel) {
    std::vector<Target::Workspace>& ws = workspaces_.at(sz(channel));
    const Eigen::Index n = thetas.cols();
    slots.head(static_cast<Eigen::Index>(plan_.shards) * n).setZero();
    inference::parallel_ranges(threads_, targets_.size(), [&](std::size_t begin, std::size_t end, std::size_t) {
        for (std::size_t i = begin; i < end; ++i) {
            const Eigen::Index at = static_cast<Eigen::Index>(plan_.first() + static_cast<int>(i)) * n;
            targets_[i]->log_likelihoods(thetas, slots.segment(at, n), ws[i]);
        }
    });
}

std::vector<const Families*> LocalShards::families() const {
    std::vector<const Families*> out;
    for (const auto& t : targets_) out.push_back(&t->families());
    return out;
}

ShardedLikelihood::ShardedLikelihood(LocalShards& local, std::vector<std::unique_ptr<Communicator>> channels)
    : local_(local) {
    if (channels.empty() || static_cast<int>(channels.size()) != local.channels())
        throw Error(ErrorKind::usage, fmt::format("the shards have {} channels but {} communicators were given",
                                                  local.channels(), channels.size()));
    if (channels.front()->rank() != 0) throw Error(ErrorKind::usage, "the sharded likelihood is evaluated from rank 0 only");
    for (auto& c : channels) channels_.push_back({std::move(c), {}, {}, {}, {}, false});
}

ShardedLikelihood::~ShardedLikelihood() { stop(); }

int ShardedLikelihood::acquire() const {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (stopped_) throw Error(ErrorKind::usage, "the other ranks were told to stop: nothing evaluates the shards");
        for (std::size_t c = 0; c < channels_.size(); ++c)
            if (!channels_[c].busy) {
                channels_[c].busy = true;
                return static_cast<int>(c);
            }
        freed_.wait(lock);
    }
}

void ShardedLikelihood::release(int c) const {
    {
        const std::lock_guard lock(mutex_);
        channels_[sz(c)].busy = false;
    }
    freed_.notify_all();
}

template <class F>
auto ShardedLikelihood::on_free_channel(F&& f) const {
    const int c = acquire();
    struct Release {
        const ShardedLikelihood& s;
        int c;
        ~Release() { s.release(c); }
    } release{*this, c};
    return f(c);
}

// The shards' terms in shard order (runtime/distributed/sharded_likelihood.hpp), exchanged on
// a channel no other evaluation is using.
double ShardedLikelihood::value(Eigen::Ref<const Eigen::VectorXd> theta, double* grad) const {
    return on_free_channel([&](int c) {
        Channel& ch = channels_[sz(c)];
        std::int64_t op = grad ? op_gradient : op_value;
        ch.comm->broadcast(&op, 1);
        ch.theta = theta;
        ch.comm->broadcast(ch.theta.data(), static_cast<int>(ch.theta.size()));
        const std::string failure = exchange(local_, *ch.comm, c, ch.theta, grad != nullptr, ch.slots, ch.sum);
        if (!failure.empty()) throw Error(ErrorKind::inference, failure);
        const int s = stride(local_.dim(), grad != nullptr);
        double v = 0;
        for (int k = 0; k < local_.plan().shards; ++k) {
            const Eigen::Index at = static_cast<Eigen::Index>(k) * s;
            v += ch.sum[at];
            if (grad) Eigen::Map<Eigen::VectorXd>(grad, local_.dim()) += ch.sum.segment(at + 1, local_.dim());
        }
        return v;
    });
}

void ShardedLikelihood::values(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Eigen::Ref<Eigen::VectorXd> out) const {
    on_free_channel([&](int c) {
        Channel& ch = channels_[sz(c)];
        std::int64_t op = op_values, n = thetas.cols();
        ch.comm->broadcast(&op, 1);
        ch.comm->broadcast(&n, 1);
        ch.thetas = thetas;
        ch.comm->broadcast(ch.thetas.data(), static_cast<int>(ch.thetas.size()));
        const std::string failure = exchange_batch(local_, *ch.comm, c, ch.thetas, ch.slots, ch.sum);
        if (!failure.empty()) throw Error(ErrorKind::inference, failure);
        out.setZero();
        for (int k = 0; k < local_.plan().shards; ++k) out += ch.sum.segment(static_cast<Eigen::Index>(k) * n, n);
    });
}

void ShardedLikelihood::run_together(const std::vector<std::int64_t>& args,
                                     const std::function<void(Communicator&)>& job) const {
    on_free_channel([&](int c) {
        Communicator& comm = *channels_[sz(c)].comm;
        std::int64_t op = op_task, n = static_cast<std::int64_t>(args.size());
        comm.broadcast(&op, 1);
        comm.broadcast(&n, 1);
        std::vector<std::int64_t> a = args;
        if (!a.empty()) comm.broadcast(a.data(), static_cast<int>(a.size()));
        job(comm);
    });
}

void ShardedLikelihood::stop() {
    std::unique_lock lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    freed_.wait(lock, [&] {
        for (const Channel& ch : channels_)
            if (ch.busy) return false;
        return true;
    });
    for (Channel& ch : channels_) {
        std::int64_t op = op_stop;
        ch.comm->broadcast(&op, 1);
    }
}

namespace {

void run_task(Communicator& comm, const Task& task) {
    std::int64_t n = 0;
    comm.broadcast(&n, 1);
    std::vector<std::int64_t> args(static_cast<std::size_t>(n));
    if (n > 0) comm.broadcast(args.data(), static_cast<int>(n));
    try {
        if (task) task(comm, args);
    } catch (const std::exception&) {
        // Rank 0 meets the same error in the same computation and reports it.
    }
}

void serve_channel(LocalShards& local, Communicator& comm, int channel, const Task& task) {
    Eigen::VectorXd theta(local.dim()), slots, sum;
    Eigen::MatrixXd thetas;
    for (;;) {
        std::int64_t op = op_stop;
        comm.broadcast(&op, 1);
        if (op == op_stop) return;
        if (op == op_task) {
            run_task(comm, task);
            continue;
        }
        if (op == op_values) {
            std::int64_t n = 0;
            comm.broadcast(&n, 1);
            thetas.resize(local.dim(), static_cast<Eigen::Index>(n));
            comm.broadcast(thetas.data(), static_cast<int>(thetas.size()));
            exchange_batch(local, comm, channel, thetas, slots, sum);
            continue;
        }
        comm.broadcast(theta.data(), static_cast<int>(theta.size()));
        exchange(local, comm, channel, theta, op == op_gradient, slots, sum);
    }
}

}  // namespace

void serve(LocalShards& local, std::vector<std::unique_ptr<Communicator>>& channels, const Task& task) {
    std::vector<std::thread> others;
    for (std::size_t c = 1; c < channels.size(); ++c)
        others.emplace_back(
            [&local, &channels, &task, c] { serve_channel(local, *channels[c], static_cast<int>(c), task); });
    serve_channel(local, *channels.front(), 0, task);
    for (std::thread& t : others) t.join();
}

std::string model_fingerprint(const ir::Graph& graph) {
    const std::string d = lang::describe(graph);
    const auto first = d.find('\n');
    return first == std::string::npos ? d : d.substr(first + 1);
}

namespace {

// The first line where two texts differ, as "'a' against 'b'" (trimmed).
std::string first_difference(const std::string& a, const std::string& b) {
    std::istringstream sa(a), sb(b);
    std::string la, lb;
    for (;;) {
        const bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
        if (!ga) la.clear();
        if (!gb) lb.clear();
        if (la != lb || (!ga && !gb)) break;
    }
    const auto trim = [](const std::string& s) {
        const auto from = s.find_first_not_of(' ');
        return from == std::string::npos ? std::string("(nothing)") : s.substr(from);
    };
    return fmt::format("'{}' against '{}'", trim(la), trim(lb));
}

}  // namespace

bool agree(Communicator& comm, const std::string& error, const std::string& fingerprint) {
    const std::vector<std::string> all = comm.gather(error.empty() ? "F" + fingerprint : "E" + error);
    // Rank 0's own error is its caller's to throw; the first other rank's, or a model that
    // differs from rank 0's, is thrown here.
    std::string verdict;
    const bool own = !all.empty() && all.front().front() == 'E';
    for (std::size_t r = 1; r < all.size() && verdict.empty(); ++r) {
        if (all[r].front() == 'E')
            verdict = fmt::format("rank {} of {}: {}", r, all.size(), all[r].substr(1));
        else if (!own && all[r] != all.front())
            verdict = fmt::format("rank {} of {} read a different model from rank 0's: {}", r, all.size(),
                                  first_difference(all[r].substr(1), all.front().substr(1)));
    }
    std::int64_t go = verdict.empty() && !own ? 1 : 0;
    comm.broadcast(&go, 1);
    if (comm.rank() == 0 && !verdict.empty()) throw Error(ErrorKind::data, verdict);
    return go != 0;
}

}  // namespace vbn::distributed
