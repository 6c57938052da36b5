// What the binary asks of the operating system: Ctrl-C during a run, and the memory left.
#pragma once

#include <atomic>
#include <csignal>

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

// Bytes of memory available to this process: MemAvailable from /proc/meminfo, else the
// physical memory from sysconf; 0 when neither is known.
double available_memory();

}  // namespace vbn::commands
