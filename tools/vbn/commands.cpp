#include "tools/vbn/commands.hpp"
#include "tools/vbn/command_guard.hpp"

#include "inference/rng.hpp"
#include "lang/describe.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/describe_data.hpp"
#include "runtime/error.hpp"
#include "runtime/data/model.hpp"
#include "runtime/predictive/simulate.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <random>

namespace vbn::commands {

int exit_status(int kind) {
    switch (static_cast<ErrorKind>(kind)) {
        case ErrorKind::inference: return 2;
        case ErrorKind::cancelled: return 130;
        default: return 1;
    }
}

std::uint64_t fresh_seed() {
    std::random_device rd;
    const auto t = static_cast<std::uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    return ((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ t) % 4294967296ULL;
}

namespace {

void write_text_file(const std::string& path, const std::string& text, const char* what) {
    std::ofstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write {} '{}'", what, path));
    f << text;
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write {} '{}'", what, path));
}
}  // namespace

int check(const CheckArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        std::string warnings;
        const ir::Graph g = load_model(args.model, &warnings);
        err << warnings;
        out << lang::describe(g);
        if (args.dot) {
            write_text_file(*args.dot, lang::to_dot(g), "DOT file");
            out << fmt::format("\nwrote {}\n", *args.dot);
        }
        if (args.data) {
            LoadNotes notes;
            const Dataset d = load_csv(g, *args.data, &notes);
            for (const auto& n : notes.notices) err << "note: " << n << '\n';
            out << '\n' << describe_data(g, d);
        }
        return 0;
    });
}

int simulate(const SimulateArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        if (args.rows < 1) throw Error(ErrorKind::usage, "--rows must be at least 1");
        std::string warnings;
        const ir::Graph g = load_model(args.model, &warnings);
        err << warnings;
        const std::uint64_t seed = args.seed ? *args.seed : fresh_seed();
        if (!args.seed) err << fmt::format("note: seed {} (pass --seed {} to repeat this run)\n", seed, seed);
        inference::Rng rng(seed, 0);
        Eigen::VectorXd theta = draw_prior(g, rng);
        if (args.params) {
            nlohmann::json j;
            try {
                j = nlohmann::json::parse(read_file(*args.params, "parameter file"));
            } catch (const nlohmann::json::parse_error& e) {
                throw Error(ErrorKind::usage, fmt::format("{}: not valid JSON: {}", *args.params, e.what()));
            }
            std::vector<std::string> given;
            theta_from_json(g, j, theta, &given);
            if (given.size() < g.parameters.size())
                err << "note: parameters not in " << *args.params << " were drawn from their priors\n";
        }
        for (const auto& el : g.elements)
            if (!el.binary) {
                err << "note: covariates have no distribution in the model; simulate draws them iid N(0, 1)\n";
                break;
            }
        SimulateOptions opt;
        opt.rows = args.rows;
        opt.include_hidden = args.include_hidden;
        if (args.output) {
            std::ofstream f(*args.output, std::ios::binary);
            if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", *args.output));
            simulate_csv(g, theta, opt, rng, f);
            if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", *args.output));
            err << fmt::format("wrote {} rows to {}; parameters: {}\n", args.rows, *args.output, theta_to_json(g, theta).dump());
        } else {
            simulate_csv(g, theta, opt, rng, out);
            err << fmt::format("parameters: {}\n", theta_to_json(g, theta).dump());
        }
        return 0;
    });
}

}  // namespace vbn::commands
