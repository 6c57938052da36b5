// Test helper: where a parameter element (by its printed name, "w1[2]") sits in θ, for
// brute-force formulas written out from a model's text.
#pragma once

#include "lang/ir.hpp"

#include <doctest/doctest.h>

#include <string>

namespace vbn::test {

inline int theta_index(const ir::Graph& g, const std::string& name) {
    for (int k = 0; k < g.dim; ++k)
        if (g.theta_name(k) == name) return k;
    FAIL("no parameter " << name);
    return -1;
}

}  // namespace vbn::test
