#include "tools/vbn/system.hpp"

#include <ctime>
#include <fstream>
#include <string>
#include <pthread.h>
#include <unistd.h>

namespace vbn::commands {

namespace {
std::atomic<bool> interrupt_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_interrupt(int) { interrupt_flag.store(true, std::memory_order_relaxed); }
}  // namespace

InterruptScope::InterruptScope() {
    interrupt_flag.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    installed_ = sigaction(SIGINT, &sa, &previous_) == 0;
}

InterruptScope::~InterruptScope() {
    if (installed_) sigaction(SIGINT, &previous_, nullptr);
}

const std::atomic<bool>* InterruptScope::flag() { return &interrupt_flag; }

BlockedInterrupts::BlockedInterrupts() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
}

void BlockedInterrupts::watch() {
    if (watcher_.joinable()) return;
    watcher_ = std::thread([this] {
        // Woken every 0.1 s to see whether the run is over.
        const timespec tick{0, 100'000'000};
        while (!done_.load()) {
            if (sigtimedwait(&set_, nullptr, &tick) > 0) interrupt_flag.store(true, std::memory_order_relaxed);
        }
    });
}

BlockedInterrupts::~BlockedInterrupts() {
    done_.store(true);
    if (watcher_.joinable()) watcher_.join();
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

double available_memory() {
    std::ifstream in("/proc/meminfo");
    for (std::string key; in >> key;) {
        double kb = 0;
        in >> kb;
        if (key == "MemAvailable:") return kb * 1024.0;
        in.ignore(256, '\n');
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace vbn::commands
