// Simulation-based calibration (validation/sbc.hpp) of every sampling method on a small fully
// observed model (bench/models/sbc_observed.vbn), on the paper's multimodal model
// (examples/paper/multimodal.vbn) and on an occupancy model with a hidden node and 11 weights
// (bench/models/sbc_occupancy.vbn), the same with shared detection weights
// (bench/models/sbc_occupancy_tied.vbn), on six groups whose intercepts share a learned
// prior scale (bench/models/sbc_multilevel.vbn) and on a latent class whose items'
// intercepts do (bench/models/sbc_latent_hier.vbn), and on two models whose exchanges of
// hidden nodes are approximate symmetries (bench/models/sbc_rivals.vbn,
// sbc_two_diseases.vbn): rank histograms and chi-square p-values.
//
//   build/bench/sbc [--replications 200] [--methods varmh,varblock,...] [--models observed,...] [--seed 1]
//                   [--thin 10] [--max-draws N]
//
// --max-draws N: the chains run on while short of ESS or R-hat, up to N draws, as `vbn fit`
// does without --draws; with --thin 1 (99 draws, below the 100 ESS wanted of one chain)
// every replication runs on, so the ranks test the stopping rule as well as the sampler.
//
// Run from the source tree. Prints one line per model, method and parameter.
#include "runtime/data/model.hpp"
#include "validation/sbc.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    int replications = 200;
    std::uint64_t seed = 1;
    int thin = 10, max_draws = 0;
    std::vector<std::string> methods{"varmh", "varblock", "varmix", "regen", "nuts", "rwm"};
    std::vector<std::string> models;  // empty: every case below
    const auto split = [](const std::string& text) {
        std::vector<std::string> out;
        std::stringstream ss(text);
        for (std::string m; std::getline(ss, m, ',');) out.push_back(m);
        return out;
    };
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--replications") replications = std::stoi(v);
        else if (a == "--seed") seed = std::stoull(v);
        else if (a == "--methods") methods = split(v);
        else if (a == "--models") models = split(v);
        else if (a == "--thin") thin = std::stoi(v);
        else if (a == "--max-draws") max_draws = std::stoi(v);
        else {
            fmt::print(stderr, "unknown option {}\n", a);
            return 2;
        }
    }
    struct Case {
        std::string name, path;
        long rows;
    };
    const std::vector<Case> cases{{"observed", "bench/models/sbc_observed.vbn", 50},
                                  {"multimodal", "examples/paper/multimodal.vbn", 50},
                                  {"occupancy", "bench/models/sbc_occupancy.vbn", 50},
                                  {"occupancy_tied", "bench/models/sbc_occupancy_tied.vbn", 50},
                                  {"multilevel", "bench/models/sbc_multilevel.vbn", 40},
                                  {"latent_hier", "bench/models/sbc_latent_hier.vbn", 100},
                                  {"rivals", "bench/models/sbc_rivals.vbn", 300},
                                  {"two_diseases", "bench/models/sbc_two_diseases.vbn", 60}};
    fmt::print("{:<14} {:<9} {:<5} {:>7} {:>8} {:>6}  histogram (10 bins of ranks 0..99)\n", "model", "method", "param", "chi2",
               "p", "secs");
    for (const Case& c : cases) {
        if (!models.empty() && std::find(models.begin(), models.end(), c.name) == models.end()) continue;
        const vbn::ir::Graph graph = vbn::load_model(c.path);
        for (const std::string& m : methods) {
            vbn::SbcOptions o;
            o.method = m;
            o.replications = replications;
            o.rows = c.rows;
            o.seed = seed;
            o.thin = thin;
            o.max_draws = max_draws;
            const vbn::SbcResult r = vbn::run_sbc(graph, o);
            for (std::size_t k = 0; k < r.names.size(); ++k) {
                std::string h;
                for (int n : r.histogram[k]) h += fmt::format(" {:3d}", n);
                fmt::print("{:<14} {:<9} {:<5} {:7.2f} {:8.4f} {:6.1f} {}{}\n", c.name, m, r.names[k], r.chi_square[k], r.p_value[k],
                           r.seconds, h, r.failed_fits ? fmt::format("  ({} fits failed)", r.failed_fits) : "");
            }
            std::fflush(stdout);
        }
    }
    return EXIT_SUCCESS;
}
