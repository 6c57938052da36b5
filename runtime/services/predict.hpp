// The prediction job (`vbn predict`, vbn::api::predict): posterior predictive probabilities
// of the unobserved nodes of new rows (runtime/predictive/predict.hpp), averaged over
// posterior draws or over draws from a variational fit to training data.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/predictive/predict.hpp"
#include "runtime/services/callbacks.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

namespace vbn::services {

struct PredictSettings {
    std::string target;        // the node element to predict ("y", "v[3]"); empty: every unobserved one
    long vb_draws = 4000;      // from a variational fit: draws from it
    int restarts = 0;          // ... fitted with this many restarts, the best ELBO used (0: automatic, restarts_for)
    std::uint64_t seed = 1;    // seeds those draws and restarts
    int max_enumerated = 12;   // unobserved values summed out together, at most
};

struct PredictRun {
    std::vector<Prediction> predictions;  // by row, then element
    PredictionScores scores;              // over predictions whose truth is known
    long draws = 0;                       // posterior draws averaged over
};

// The element `name` names, for PredictSettings::target. Throws vbn::Error (usage) for a
// covariate or a name the model does not have.
int target_element(const ir::Graph& graph, const std::string& name);

// Predictions from draws, one θ per row in the graph's layout (S × Graph::dim).
PredictRun predict(const ir::Graph& graph, const Dataset& rows, const Eigen::MatrixXd& draws, const PredictSettings& settings);

// Draws from the variational posterior fitted to `train` (as `vbn predict --vb`), in the
// graph's layout, to pass to predict().
Eigen::MatrixXd variational_draws(const ir::Graph& graph, const Dataset& train, const PredictSettings& settings,
                                  const Callbacks& callbacks = {});

}  // namespace vbn::services
