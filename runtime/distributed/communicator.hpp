// What the sharded likelihood needs of its processes: a rank, a size, three collectives, and
// copies of itself on which collectives may run side by side. SingleProcess is the one
// process of a run without MPI (every shard local); world() is MPI_COMM_WORLD where vbn is
// built with VBN_MPI and MPI runs (runtime/distributed/communicator.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vbn::distributed {

class Communicator {
public:
    virtual ~Communicator() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // Rank 0's n values into every rank's `data`.
    virtual void broadcast(double* data, int n) = 0;
    virtual void broadcast(std::int64_t* data, int n) = 0;
    // The element-wise sum over ranks of every rank's `in` into every rank's `out`.
    virtual void allreduce_sum(const double* in, double* out, int n) = 0;
    // Every rank's text, in rank order, on rank 0 (empty elsewhere).
    virtual std::vector<std::string> gather(const std::string& text) = 0;
    // n copies of this communicator (MPI_Comm_dup): a collective call, every rank asking for
    // the same n. Where concurrent(), collectives on different copies may run at the same time
    // from different threads; otherwise one at a time.
    virtual std::vector<std::unique_ptr<Communicator>> copies(int n) = 0;
    virtual bool concurrent() const = 0;
};

class SingleProcess final : public Communicator {
public:
    int rank() const override { return 0; }
    int size() const override { return 1; }
    void broadcast(double*, int) override {}
    void broadcast(std::int64_t*, int) override {}
    void allreduce_sum(const double* in, double* out, int n) override {
        for (int i = 0; i < n; ++i) out[i] = in[i];
    }
    std::vector<std::string> gather(const std::string& text) override { return {text}; }
    std::vector<std::unique_ptr<Communicator>> copies(int n) override {
        std::vector<std::unique_ptr<Communicator>> out;
        for (int i = 0; i < n; ++i) out.push_back(std::make_unique<SingleProcess>());
        return out;
    }
    bool concurrent() const override { return true; }
};

// MPI_COMM_WORLD where vbn is built with VBN_MPI and runs under mpirun (MPI initialised by
// MpiSession below); otherwise SingleProcess.
std::unique_ptr<Communicator> world();

// MPI_Init_thread on construction (asking for MPI_THREAD_MULTIPLE, needing at least
// MPI_THREAD_SERIALIZED) and MPI_Finalize on destruction, where vbn is built with VBN_MPI;
// nothing otherwise. At most one per process, around the run that uses world(); every
// communicator is destroyed before it.
class MpiSession {
public:
    MpiSession();
    ~MpiSession();
    MpiSession(const MpiSession&) = delete;
    MpiSession& operator=(const MpiSession&) = delete;
    // This process's rank in MPI_COMM_WORLD (0 without MPI).
    static int rank();
};

}  // namespace vbn::distributed
