#include "runtime/distributed/communicator.hpp"

#include "runtime/error.hpp"

#if defined(VBN_MPI)
#include <mpi.h>
#endif

#include <numeric>

namespace vbn::distributed {

#if defined(VBN_MPI)

namespace {

bool mpi_running() {
    int initialised = 0, finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    return initialised && !finalised;
}

int thread_level() {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    return level;
}

// MPI_COMM_WORLD or a copy of it. Each copy is used by one thread at a time (rank 0's
// evaluations take a free copy each: runtime/distributed/sharded_likelihood.cpp); copies run
// side by side only where the library gave MPI_THREAD_MULTIPLE.
class MpiCommunicator final : public Communicator {
public:
    explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD, bool owned = false) : comm_(comm), owned_(owned) {}
    ~MpiCommunicator() override {
        if (owned_ && mpi_running()) MPI_Comm_free(&comm_);
    }
    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;
    int rank() const override {
        int r = 0;
        MPI_Comm_rank(comm_, &r);
        return r;
    }
    int size() const override {
        int s = 1;
        MPI_Comm_size(comm_, &s);
        return s;
    }
    void broadcast(double* data, int n) override { MPI_Bcast(data, n, MPI_DOUBLE, 0, comm_); }
    void broadcast(std::int64_t* data, int n) override { MPI_Bcast(data, n, MPI_INT64_T, 0, comm_); }
    void allreduce_sum(const double* in, double* out, int n) override {
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm_);
    }
    std::vector<std::unique_ptr<Communicator>> copies(int n) override {
        std::vector<std::unique_ptr<Communicator>> out;
        for (int i = 0; i < n; ++i) {
            MPI_Comm copy = MPI_COMM_NULL;
            MPI_Comm_dup(comm_, &copy);
            out.push_back(std::make_unique<MpiCommunicator>(copy, true));
        }
        return out;
    }
    bool concurrent() const override { return thread_level() >= MPI_THREAD_MULTIPLE; }
    std::vector<std::string> gather(const std::string& text) override {
        const int n = size();
        int length = static_cast<int>(text.size());
        std::vector<int> lengths(static_cast<std::size_t>(n)), starts(static_cast<std::size_t>(n));
        MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm_);
        std::exclusive_scan(lengths.begin(), lengths.end(), starts.begin(), 0);
        std::string all(rank() == 0 ? static_cast<std::size_t>(starts.back() + lengths.back()) : 0, '\0');
        MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), starts.data(), MPI_CHAR, 0, comm_);
        std::vector<std::string> out;
        if (rank() == 0)
            for (std::size_t r = 0; r < lengths.size(); ++r)
                out.push_back(all.substr(static_cast<std::size_t>(starts[r]), static_cast<std::size_t>(lengths[r])));
        return out;
    }

private:
    MPI_Comm comm_;
    bool owned_;
};

}  // namespace

std::unique_ptr<Communicator> world() {
    if (mpi_running()) return std::make_unique<MpiCommunicator>();
    return std::make_unique<SingleProcess>();
}

MpiSession::MpiSession() {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        throw Error(ErrorKind::limit, "this MPI library cannot be called from more than one thread (MPI_THREAD_SERIALIZED)");
    }
}

MpiSession::~MpiSession() {
    if (mpi_running()) MPI_Finalize();
}

int MpiSession::rank() {
    int r = 0;
    if (mpi_running()) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

#else

std::unique_ptr<Communicator> world() { return std::make_unique<SingleProcess>(); }
MpiSession::MpiSession() = default;
MpiSession::~MpiSession() = default;
int MpiSession::rank() { return 0; }

#endif

}  // namespace vbn::distributed
