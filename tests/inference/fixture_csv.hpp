// Reading the CSV fixtures R wrote (tests/inference/fixtures/): comma-separated fields, with
// R's spellings of the special values. Shared by the suites checked against R (posterior's
// diagnostics, loo's PSIS-LOO).
#pragma once

#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace vbn::test {

// The fixtures' folder, or a subfolder of it ("loo/").
inline std::string fixture_dir(const std::string& sub = "") {
    return std::string(VBN_SOURCE_DIR) + "/tests/inference/fixtures/" + sub;
}

inline std::vector<std::string> split_commas(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, ',')) out.push_back(field);
    return out;
}

// A field as R writes a double: NA is NaN, Inf is +∞.
inline double parse_value(const std::string& s) {
    if (s == "NA") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Inf") return std::numeric_limits<double>::infinity();
    return std::stod(s);
}

}  // namespace vbn::test
