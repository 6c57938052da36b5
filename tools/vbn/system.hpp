// What the binary asks of the operating system: Ctrl-C during a run, and the memory left.
#pragma once

#include <atomic>
#include <csignal>
#include <thread>

namespace vbn::commands {

// SIGINT while the scope lives sets flag() (the handler only stores to a lock-free atomic, which
// is async-signal-safe); the run checks it between iterations, finishes the current one and
// stops. The previous disposition comes back when the scope ends, so a second Ctrl-C once
// sampling is over (or outside a run) behaves as usual.
class InterruptScope {
public:
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
    static const std::atomic<bool>* flag();

private:
    struct sigaction previous_ {};
    bool installed_ = false;
};

// A sharded run under mpirun (docs/mpi.md): SIGINT and SIGTERM (which mpirun sends every rank
// when it is interrupted) are blocked in this thread and every thread started after it, MPI's
// own included, so that no signal lands inside an MPI call; watch() then starts a thread that
// waits for them and sets InterruptScope::flag() (rank 0). The other ranks never take them:
// they end when rank 0, finished, tells them to stop. Construct it before MPI is initialised.
class BlockedInterrupts {
public:
    BlockedInterrupts();
    ~BlockedInterrupts();
    BlockedInterrupts(const BlockedInterrupts&) = delete;
    BlockedInterrupts& operator=(const BlockedInterrupts&) = delete;
    void watch();

private:
    sigset_t set_ {}, previous_ {};
    std::atomic<bool> done_{false};
    std::thread watcher_;
};

// Bytes of memory available to this process: MemAvailable from /proc/meminfo, else the
// physical memory from sysconf; 0 when neither is known.
double available_memory();

}  // namespace vbn::commands
