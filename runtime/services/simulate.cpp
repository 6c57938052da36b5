#include "runtime/services/simulate.hpp"

#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "runtime/predictive/simulate.hpp"

#include <vector>

namespace vbn::services {

Eigen::VectorXd simulate(const ir::Graph& graph, const SimulateSettings& settings, std::ostream& csv, const Callbacks& callbacks) {
    if (settings.rows < 1) throw Error(ErrorKind::usage, "--rows must be at least 1");
    inference::Rng rng(settings.seed, 0);
    Eigen::VectorXd theta = draw_prior(graph, rng);
    if (settings.params) {
        std::vector<std::string> given;
        theta_from_json(graph, *settings.params, theta, &given);
        if (given.size() < graph.parameters.size()) 
            callbacks.note("parameters not in " + settings.params_name + " were drawn from their priors");
    }
    for (const auto& el : graph.elements)
        if (!el.binary) {
            callbacks.note("covariates have no distribution in the model; simulate draws them iid N(0, 1)");
            break;
        }
    SimulateOptions opt;
    opt.rows = settings.rows;
    opt.include_hidden = settings.include_hidden;
    simulate_csv(graph, theta, opt, rng, csv);
    return theta;
}

}  // namespace vbn::services
