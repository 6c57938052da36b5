// What `vbn loo` prints: PSIS-LOO's estimates and Pareto k̂ table in the layout of R's loo
// (print.psis_loo with one decimal), and the warning about rows whose k̂ is too high.
#pragma once

#include "inference/loo.hpp"

#include <string>

namespace vbn {

// "Computed from S by N log-likelihood matrix …", the estimates with their se, the Monte
// Carlo se of elpd_loo and the k̂ table (or loo's line that every k̂ is good).
std::string format_loo(const inference::LooResult& loo);

// "Pareto k̂ above 0.7 for data row 16 (0.93): …", naming each such data row (1-based, in
// row order) with its k̂; empty when there are none.
std::string loo_khat_warning(const inference::LooResult& loo);

}  // namespace vbn
