// "Did you mean ...?": the name a typo most likely stands for, shared by the model's
// diagnostics (lang/) and the data's (a CSV header naming a column the model does not have).
#pragma once

#include <string>
#include <vector>

namespace vbn::lang {

// The candidate closest to `name` by edit distance when it is close enough to be a likely
// typo (one edit for names of up to 3 characters, two up to 6, else three; a candidate
// equal to `name` but for case first), else empty.
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace vbn::lang
