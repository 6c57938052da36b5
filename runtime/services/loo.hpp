// The loo job (`vbn loo FILE_1.csv …`): PSIS leave-one-out cross-validation
// (inference/loo.hpp) from the log_lik.1 … log_lik.N columns that `vbn fit --log-lik`
// writes beside each chain's draws.
#pragma once

#include "inference/loo.hpp"

#include <Eigen/Core>

#include <string>
#include <vector>

namespace vbn::services {

// Each file's log_lik columns (draws × N, in column order log_lik.1 … log_lik.N). Throws
// vbn::Error: io (a file that cannot be read), data naming the file for a file without
// log_lik columns, columns that skip a number, files whose N or number of draws differ from
// the first's, or a value that is not finite (naming the column and draw).
std::vector<Eigen::MatrixXd> read_log_lik(const std::vector<std::string>& files);

// PSIS-LOO of one fit's chain files (one file per chain).
inference::LooResult loo(const std::vector<std::string>& files);

}  // namespace vbn::services
