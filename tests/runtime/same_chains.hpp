// Whether two fits drew the same chains, bit for bit (draws and lp): the check that a run
// does not depend on how many threads made it.
#pragma once

#include "runtime/sampling/fit.hpp"

namespace vbn::test {

inline bool same_chains(const FitResult& a, const FitResult& b) {
    if (a.chains.size() != b.chains.size()) return false;
    for (std::size_t c = 0; c < a.chains.size(); ++c)
        if (a.chains[c].draws != b.chains[c].draws || a.chains[c].lp != b.chains[c].lp) return false;
    return true;
}

}  // namespace vbn::test
