// sz(i): an index held signed (int in the IR, Eigen::Index in Eigen) as the std::size_t that
// std::vector takes, for indices already known to be non-negative. One definition for every
// file that needs it, rather than a private copy in each.
#pragma once

#include <cstddef>
#include <type_traits>

namespace vbn {

template <class I>
    requires std::is_integral_v<I>
constexpr std::size_t sz(I i) {
    return static_cast<std::size_t>(i);
}

}  // namespace vbn
