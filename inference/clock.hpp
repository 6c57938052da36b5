// Wall-clock seconds since a point of the steady clock, for the run times vbn reports.
#pragma once

#include <chrono>

namespace vbn::inference {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace vbn::inference
