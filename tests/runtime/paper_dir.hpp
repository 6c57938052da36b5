// Test helper: the directory of the paper's example models and data sets (examples/paper/),
// which many runtime tests load.
#pragma once

#include <string>

namespace vbn::test {

inline const std::string paper = std::string(VBN_SOURCE_DIR) + "/examples/paper/";

}  // namespace vbn::test
