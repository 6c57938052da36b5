// Test helper: FitOptions for a short run (the other fields keep their defaults).
#pragma once

#include "runtime/sampling/fit.hpp"

#include <cstdint>
#include <string>

namespace vbn::test {

inline FitOptions short_run(const std::string& method, int chains, int warmup, int draws, std::uint64_t seed) {
    FitOptions o;
    o.method = method;
    o.chains = chains;
    o.warmup = warmup;
    o.draws = draws;
    o.seed = seed;
    return o;
}

}  // namespace vbn::test
