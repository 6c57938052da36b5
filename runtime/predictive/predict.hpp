// Posterior predictive probabilities of unobserved nodes in new rows (docs/design.md §3,
// `vbn predict`).
//
// For a row with observed values x_o and a node j unobserved in it, given draws θ_1..θ_S
// from the posterior p(θ | D) of the training data D,
//     P(x_j = +1 | x_o, D) = Σ_s p(x_j = +1, x_o | θ_s) / Σ_s p(x_o | θ_s),
// the Monte Carlo form of E[p(x_j = +1, x_o | θ) | D] / E[p(x_o | θ) | D]. It is exact Bayes
// for a new row: the row's own observed values also weigh the draws (a draw under which
// they are unlikely counts less). Inside, p(x_j, x_o | θ) sums the row's other unobserved
// values out exactly: unobserved nodes that are neither asked for nor ancestors of an
// observed or asked-for node are dropped (their CPDs sum to one), and the rest split into
// groups that share no factor, each summed over its 2^m configurations when m is at most
// max_enumerated, else by variable elimination (runtime/target/elimination.hpp) with the
// width, the most values summed at once, at most max_enumerated, as in the target.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace vbn {

struct VbFit;

struct PredictOptions {
    // The element to predict in every row (observed values of it are hidden from the
    // prediction and kept for scoring), or -1: every unobserved binary element of each row.
    int target = -1;
    int max_enumerated = 12;  // the largest group enumerated, and the largest width eliminated
};

struct Prediction {
    long row = 0;      // 1-based data row, in input order
    int element = -1;  // the predicted element (Graph::elements)
    double p = 0;      // P(x = +1 | the row's observed values, training data)
    int truth = 0;     // the target's value in the row (±1), 0 when unknown
};

// Predictions for every row (in input order; `data` must carry row_pattern) and, within a
// row, for its unobserved elements in element order. `draws` holds one θ per row (S × dim,
// the layout of Graph::dim). Throws vbn::Error (usage for a bad target or draws; limit when
// a group of unobserved values is wider than max_enumerated, naming the CSV line).
std::vector<Prediction> predict(const ir::Graph& graph, const Dataset& data, const Eigen::MatrixXd& draws,
                                const PredictOptions& options = {});

// Scores of predictions whose truth is known (rows weighted equally).
struct PredictionScores {
    long scored = 0;        // predictions with a known truth
    double accuracy = 0;    // share with (p > 0.5) == (truth = +1)
    double log_loss = 0;    // mean −log P(truth)
    double brier = 0;       // mean (p − [truth = +1])²
};
PredictionScores score_predictions(const std::vector<Prediction>& predictions);

// n draws (rows, n × dim) from the variational posterior N(mean, cov), from Rng(seed, 0): the
// posterior `vbn predict --vb` averages over. Throws vbn::Error (inference) when cov is not
// positive definite.
Eigen::MatrixXd gaussian_draws(const Eigen::VectorXd& mean, const Eigen::MatrixXd& cov, long n, std::uint64_t seed);
// The same from a variational fit, block by block (no dim × dim matrix); the same draws.
Eigen::MatrixXd gaussian_draws(const VbFit& q, long n, std::uint64_t seed);

// Draws from CmdStan CSV files (ours or CmdStan's), stacked, as θ in the model's layout:
// columns are matched to parameters by name (w.1, W.2.3). Throws vbn::Error (data) naming
// the file when a parameter's column is missing; other parameter columns (generated
// quantities, say) are ignored with a notice.
Eigen::MatrixXd draws_from_stan_csv(const ir::Graph& graph, const std::vector<std::string>& files,
                                    std::vector<std::string>* notices = nullptr);

// Reads rows to predict from a CSV file: like load_csv, but keeps each row's pattern, and an
// observed node's column may be absent (all its values missing; a notice says so).
Dataset load_prediction_csv(const ir::Graph& graph, const std::string& path, std::vector<std::string>* notices = nullptr);

}  // namespace vbn
