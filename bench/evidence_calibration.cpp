// Is the importance-sampled log evidence's standard error honest, and what does k̂ say?
// Over seeds 1..N, on the models whose log evidence is known by quadrature
// (tests/runtime/evidence_cases.hpp), the error of the estimate in units of its own standard
// error (mean and sd should be near 0 and 1) and the range of Pareto k̂; on the unimodal
// examples with 5–50 parents and the wells data, where there is no quadrature, the range of
// k̂ and the ESS.
//
//   build/bench/evidence_calibration [--seeds 200] [--draws 4000] [--defensive 0.1]
//                                     [--defensive-df 4] [--defensive-widen 2] [--all]
//
// --defensive 0 is the t(30) proposal alone. Without --all only the quadrature models run.
#include "runtime/variational/vb_refine.hpp"
#include "tests/runtime/evidence_cases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

namespace {

using namespace vbn;

struct Sweep {
    double k_min = std::numeric_limits<double>::infinity(), k_max = -std::numeric_limits<double>::infinity();
    double z_sum = 0, z_sq = 0, z_max = 0, ess_sum = 0, seconds = 0;
    int runs = 0;
};

Sweep sweep(const ir::Graph& g, const Dataset& d, double exact, RefineOptions o, int seeds) {
    const auto target = make_target(g, d);
    const VbFit q = variational(g, d).best_fit();
    Sweep s;
    for (int seed = 1; seed <= seeds; ++seed) {
        o.seed = static_cast<std::uint64_t>(seed);
        const RefinedPosterior r = refine(*target, q, o);
        s.k_min = std::min(s.k_min, r.pareto_k);
        s.k_max = std::max(s.k_max, r.pareto_k);
        s.ess_sum += r.ess;
        s.seconds += r.seconds;
        ++s.runs;
        if (std::isfinite(exact)) {
            const double z = (r.log_evidence - exact) / r.log_evidence_se;
            s.z_sum += z;
            s.z_sq += z * z;
            s.z_max = std::max(s.z_max, std::abs(z));
        }
    }
    return s;
}

void print(const std::string& name, const Sweep& s, bool with_z) {
    const double n = s.runs, mean = s.z_sum / n;
    fmt::print("{:<16} k-hat {:6.2f} .. {:5.2f}  ESS {:6.0f}  {:.3f} s/run", name, s.k_min, s.k_max, s.ess_sum / n, s.seconds / n);
    if (with_z)
        fmt::print("  error/se: mean {:5.2f} sd {:4.2f} max |.| {:4.2f}", mean, std::sqrt(std::max(0.0, s.z_sq / n - mean * mean)),
                   s.z_max);
    fmt::print("\n");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    int seeds = 200;
    bool all = false;
    RefineOptions o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--all") {
            all = true;
            continue;
        }
        if (i + 1 >= argc) {
            fmt::print(stderr, "{} needs a value\n", a);
            return 2;
        }
        const std::string v = argv[++i];
        if (a == "--seeds") seeds = std::stoi(v);
        else if (a == "--draws") o.draws = std::stol(v);
        else if (a == "--defensive") o.defensive = std::stod(v);
        else if (a == "--defensive-df") o.defensive_df = std::stod(v);
        else if (a == "--defensive-widen") o.defensive_widen = std::stod(v);
        else {
            fmt::print(stderr, "unknown option {}\n", a);
            return 2;
        }
    }
    fmt::print("{} seeds, {} draws, defensive {} x t({}) at scale x {}\n", seeds, o.draws, o.defensive, o.defensive_df,
               o.defensive_widen);
    namespace ec = evidence_cases;
    for (const auto& [name, c] : {std::pair{"one parameter", ec::one_parameter()}, std::pair{"two parameters", ec::two_parameters()},
                                  std::pair{"unimodal_d1", ec::unimodal_d1()}, std::pair{"multimodal", ec::multimodal()}})
        print(name, sweep(c.graph, c.data, c.exact, o, seeds), true);
    if (!all) return 0;
    const std::string root = std::string(VBN_SOURCE_DIR) + "/examples/";
    for (const std::string name : {"paper/unimodal_d5", "paper/unimodal_d10", "paper/unimodal_d20", "paper/unimodal_d50", "wells/wells"}) {
        const ir::Graph g = load_model(root + name + ".vbn");
        const Dataset d = load_csv(g, root + name + ".csv");
        print(name.substr(name.find('/') + 1), sweep(g, d, std::numeric_limits<double>::quiet_NaN(), o, seeds), false);
    }
    return 0;
}
