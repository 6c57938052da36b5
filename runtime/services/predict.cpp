#include "runtime/services/predict.hpp"

#include "runtime/error.hpp"
#include "runtime/variational/vb.hpp"

#include <fmt/format.h>

namespace vbn::services {

int target_element(const ir::Graph& graph, const std::string& name) {
    for (std::size_t e = 0; e < graph.elements.size(); ++e)
        if (graph.elements[e].name == name) {
            if (!graph.elements[e].binary)
                throw Error(ErrorKind::usage, fmt::format("--target {}: a covariate has no distribution to predict", name));
            return static_cast<int>(e);
        }
    throw Error(ErrorKind::usage, fmt::format("--target {}: the model {} has no node of that name", name, graph.name));
}

PredictRun predict(const ir::Graph& graph, const Dataset& rows, const Eigen::MatrixXd& draws, const PredictSettings& settings) {
    PredictOptions o;
    o.max_enumerated = settings.max_enumerated;
    if (!settings.target.empty()) o.target = target_element(graph, settings.target);
    PredictRun run;
    run.draws = draws.rows();
    run.predictions = vbn::predict(graph, rows, draws, o);
    run.scores = score_predictions(run.predictions);
    return run;
}

Eigen::MatrixXd variational_draws(const ir::Graph& graph, const Dataset& train, const PredictSettings& settings,
                                  const Callbacks& callbacks) {
    if (settings.vb_draws < 1) throw Error(ErrorKind::usage, "--vb-draws must be at least 1");
    VbOptions vo;
    vo.restarts = settings.restarts;
    vo.seed = settings.seed;
    vo.cancel = callbacks.interrupt;
    const VbFit q = vbn::variational(graph, train, vo).best_fit();
    return gaussian_draws(q, settings.vb_draws, settings.seed);
}

}  // namespace vbn::services
