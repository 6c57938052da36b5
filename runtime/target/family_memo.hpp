// The complete-family rows met so far, by the ±1 values of the family (runtime/target/families.cpp).
#pragma once

#include "lang/ir.hpp"

#include <cstddef>
#include <vector>

namespace vbn {

// Where a node's family holds binary elements only, its complete-family row (y, a, f) is a
// function of their ±1 values: this maps those values, a bit each, to the row's number in
// its block's table, so that a row met before costs a lookup and an addition to its weight
// instead of folding the CPD and hashing the row into the table (at 10^6 rows × 40 nodes
// with 10 binary parents, `vbn vb` spent half its time in RowTable::commit; at 10^5 nodes of
// one parent, two thirds). The numbers and weights are those the table gives: the memo only
// skips recomputing a row the table already holds.
class FamilyRowMemo {
public:
    // parents: per element, the elements its CPD reads (ir::Graph::parents).
    FamilyRowMemo(const ir::Graph& g, const std::vector<std::vector<int>>& parents);

    // Node e's entry for the values x of its family (all observed: ±1), -1 until its row is
    // known; null where e is not memoised (a covariate or more than max_members elements in
    // its family, or the memory budget spent).
    int* entry(int e, const std::vector<double>& x);

    static constexpr std::size_t max_members = 11;  // 2^12 entries (16 KB) for a node at most
    static constexpr std::size_t budget = std::size_t{1} << 22;  // entries over all nodes (16 MB)

private:
    struct Node {
        const std::vector<int>* members = nullptr;  // null: not memoised
        std::vector<int> rows;                      // 2^(members + 1) entries, made at first use
    };
    std::vector<Node> nodes_;
    std::size_t left_ = budget;
};

}  // namespace vbn
