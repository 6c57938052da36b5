// `vbn simulate MODEL --rows N`: parameters from the prior (or --params), rows sampled forward.
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/services/simulate.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace vbn::commands {

int simulate(const SimulateArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        if (args.rows < 1) throw Error(ErrorKind::usage, "--rows must be at least 1");
        const ir::Graph g = load_model_printing(args.model, err);
        services::SimulateSettings s;
        s.rows = args.rows;
        s.include_hidden = args.include_hidden;
        s.seed = seed_or_fresh(args.seed, err);
        if (args.params) {
            try {
                s.params = nlohmann::json::parse(read_file(*args.params, "parameter file"));
            } catch (const nlohmann::json::parse_error& e) {
                throw Error(ErrorKind::usage, fmt::format("{}: not valid JSON: {}", *args.params, e.what()));
            }
            s.params_name = *args.params;
        }
        const services::Callbacks cb = console_callbacks(err);
        if (!args.output) {
            const Eigen::VectorXd theta = services::simulate(g, s, out, cb);
            err << fmt::format("parameters: {}\n", theta_to_json(g, theta).dump());
            return 0;
        }
        std::ofstream f(*args.output, std::ios::binary);
        if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", *args.output));
        const Eigen::VectorXd theta = services::simulate(g, s, f, cb);
        if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", *args.output));
        err << fmt::format("wrote {} rows to {}; parameters: {}\n", args.rows, *args.output, theta_to_json(g, theta).dump());
        return 0;
    });
}

}  // namespace vbn::commands
