#include "runtime/services/predict.hpp"

#include "lang/suggest.hpp"
#include "runtime/error.hpp"
#include "runtime/variational/vb.hpp"

#include <fmt/format.h>

namespace vbn::services {

namespace {

// Why `name` names no node, with the remedy: an array's bare name gets its elements, a typo
// the closest node.
[[noreturn]] void unknown_target(const ir::Graph& graph, const std::string& name) {
    std::vector<std::string> binary;
    std::vector<std::string> elements_of_array;
    for (const auto& el : graph.elements) {
        if (!el.binary) continue;
        binary.push_back(el.name);
        if (el.name.size() > name.size() && el.name.compare(0, name.size(), name) == 0 && el.name[name.size()] == '[')
            elements_of_array.push_back(el.name);
    }
    if (!elements_of_array.empty())
        throw Error(ErrorKind::usage,
                    fmt::format("--target {}: {} is an array of {} nodes; give one element, from {} to {}", name, name,
                                elements_of_array.size(), elements_of_array.front(), elements_of_array.back()));
    const std::string near = lang::closest_name(name, binary);
    throw Error(ErrorKind::usage, fmt::format("--target {}: the model {} has no node of that name{}", name, graph.name,
                                              near.empty() ? "" : fmt::format("; did you mean {}?", near)));
}

}  // namespace

int target_element(const ir::Graph& graph, const std::string& name) {
    for (std::size_t e = 0; e < graph.elements.size(); ++e)
        if (graph.elements[e].name == name) {
            if (!graph.elements[e].binary)
                throw Error(ErrorKind::usage, fmt::format("--target {}: a covariate has no distribution to predict", name));
            return static_cast<int>(e);
        }
    unknown_target(graph, name);
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
