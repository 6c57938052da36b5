// vbn: the command-line interpreter (DESIGN.md §3). Only argument parsing lives here; each
// command is a function in runtime/commands.hpp.
#include "runtime/commands.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
    using namespace vbn::commands;
    CLI::App app{"vbn: Bayesian inference for logistic (sigmoid) belief networks"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "vbn 0.1.0");

    CheckArgs check_args;
    auto* check_cmd = app.add_subcommand("check", "Parse and check a model (and data against it); print the graph");
    check_cmd->add_option("model", check_args.model, "Model file (.vbn)")->required();
    check_cmd->add_option("--data", check_args.data, "CSV file to check against the model");
    check_cmd->add_option("--dot", check_args.dot, "Write the network as Graphviz DOT to this file");

    SimulateArgs sim_args;
    auto* sim_cmd = app.add_subcommand("simulate", "Draw parameters (prior or given) and sample rows forward");
    sim_cmd->add_option("model", sim_args.model, "Model file (.vbn)")->required();
    sim_cmd->add_option("--rows", sim_args.rows, "Number of rows to sample")->required();
    sim_cmd->add_option("--seed", sim_args.seed, "Random seed (default: a fresh one, printed)");
    sim_cmd->add_option("--params", sim_args.params, R"(JSON file of parameter values, e.g. {"w": [2, -1]})");
    sim_cmd->add_flag("--include-hidden", sim_args.include_hidden, "Also write the hidden nodes' values");
    sim_cmd->add_option("--output", sim_args.output, "CSV file to write (default: standard output)");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 1;
    }

    if (*check_cmd) return check(check_args, std::cout, std::cerr);
    if (*sim_cmd) return simulate(sim_args, std::cout, std::cerr);
    return 1;
}
