// An elimination order for summing a component's unobserved values out one at a time
// (runtime/target/elimination.hpp): greedy min-fill on the graph that links every two
// variables sharing a factor.
//
// Eliminating a variable sums a table over it and the neighbours it still has (its clique:
// 2^|clique| terms) and links those neighbours to each other ("fill"). Min-fill eliminates
// next the variable whose elimination adds the fewest links, ties broken by fewer
// neighbours, then by the lower index, so the same scopes always give the same order. The
// largest clique bounds the cost: a hidden chain has cliques of 2 however long it is.
#pragma once

#include <vector>

namespace vbn {

struct EliminationOrder {
    std::vector<int> order;  // the variables in elimination order (all m when width ≤ limit)
    int width = 0;           // the largest clique: variables summed together at once
    double cost = 0;         // Σ 2^|clique| over the steps: terms summed per evaluation
};

// The min-fill order of variables 0 .. m−1 whose factors have the given scopes (each a list
// of variables). It stops as soon as every variable left would need a clique above `limit`:
// then width is that smallest clique (> limit) and the order is incomplete.
EliminationOrder min_fill_order(int m, const std::vector<std::vector<int>>& scopes, int limit);

}  // namespace vbn
