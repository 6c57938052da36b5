// Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018): draw θ
// from the prior, simulate a data set from θ, fit it, and record the rank of each θ_k among
// L thinned posterior draws. For a sampler that is right, every rank is uniform on 0..L; a
// chi-square test over equal-width bins of ranks tells.
//
//   SbcOptions o; o.method = "varmix"; o.replications = 200;
//   const SbcResult r = run_sbc(graph, o);   // r.p_value[k], r.histogram[k]
#pragma once

#include "lang/ir.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace vbn {

struct SbcOptions {
    std::string method = "varmix";
    int replications = 200;
    long rows = 50;         // rows of each simulated data set
    int ranks = 99;         // L: thinned draws per replication, so ranks run over 0..L
    int thin = 10;          // keep every thin-th draw of the chain
    // Above ranks / chains · thin: the chains run on while short of ESS or R-hat, as `vbn fit`
    // without --draws does (FitOptions::max_draws), and the ranks come from ranks / chains
    // draws evenly spaced over all each chain made.
    int max_draws = 0;
    int warmup = 500;
    int chains = 1;         // each chain contributes ranks / chains thinned draws
    int bins = 10;          // must divide L + 1
    std::uint64_t seed = 1; // replication r draws θ and data with Rng(seed, r), fits with seed + r
};

struct SbcResult {
    std::vector<std::string> names;               // one per parameter, as reported
    std::vector<std::vector<int>> rank;           // [parameter][replication]
    std::vector<std::vector<int>> histogram;      // [parameter][bin]
    std::vector<double> chi_square;               // per parameter, bins - 1 degrees of freedom
    std::vector<double> p_value;
    int failed_fits = 0;                          // replications whose fit threw (none counted)
    double seconds = 0;
    double min_p_value() const;
};

// Runs the replications (serially; each fit uses one thread). Throws vbn::Error of kind
// usage for inconsistent options. `fitted`, when given, is the model the data are fitted
// with (same parameters and data columns, another prior): a wrong model, to show the test
// has power.
SbcResult run_sbc(const ir::Graph& graph, const SbcOptions& options, const ir::Graph* fitted = nullptr);

// The upper tail P(χ²_df > x).
double chi_square_upper_tail(double x, int df);

}  // namespace vbn
