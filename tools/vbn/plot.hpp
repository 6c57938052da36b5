// Pictures of a run (docs/design.md §3: `vbn plot FILE_1.csv … --output-dir DIR` and
// `vbn fit … --plots DIR`), drawn by gnuplot run as a separate program.
//
// Four kinds, each a gnuplot script and one or more PNG pages in DIR (nine panels a page):
//   trace_N.png    each parameter's draws against the iteration, one line per chain
//   density_N.png  the MCMC histogram of each parameter with the variational Gaussian
//                  N(mean, sd²) drawn over it when the variational fit is known
//   pairs_N.png    two parameters at a time: the draws as points and the contours of a 2-D
//                  kernel density estimate enclosing 50%, 80% and 95% of it; every pair when
//                  the model has at most five parameters, else the six most correlated pairs
//   rank_N.png     rank plots (Vehtari et al. 2021): the draws of all chains ranked together,
//                  a histogram of each chain's ranks; chains that mix give flat histograms
// The data files (draws.dat, density.dat, ranks.dat, pair_K.dat) and scripts (trace.gp,
// density.gp, pairs.gp, rank.gp) stay in DIR so that users can edit and rerun them.
#pragma once

#include <Eigen/Core>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace vbn::plot {

// A histogram on equal bins: bin b covers [lo + b width, lo + (b+1) width), the last bin
// includes its right end. density[b] = count[b] / (n width), so the bars integrate to 1.
struct Histogram {
    double lo = 0, width = 1;
    std::vector<long> count;
    std::vector<double> density;
    long dropped = 0;  // non-finite values left out
};
// bins = 0: the Freedman–Diaconis width 2 IQR n^(-1/3), the bin count clamped to [20, 60].
// A constant sample gets bins of width 1/bins around its value.
Histogram histogram(const Eigen::Ref<const Eigen::VectorXd>& x, int bins = 0);

// Rank plot counts: the draws of all chains ranked together (ties get their average rank,
// ranks 1..N), each chain's ranks counted in `bins` equal bins of [0, N]; result bins ×
// chains. Under good mixing every entry is about draws_per_chain / bins.
Eigen::MatrixXd rank_counts(const std::vector<Eigen::VectorXd>& chains, int bins);

// The kernel bandwidth of one axis of a 2-D estimate: Scott's rule s n^(-1/6) with the
// robust scale s = min(sd, IQR / 1.349), so that well-separated modes are not smeared together.
double kde_bandwidth(const Eigen::Ref<const Eigen::VectorXd>& x);

// A 2-D Gaussian kernel density estimate on a points × points grid spanning the sample
// (plus three bandwidths each side), the product of two Gaussian kernels with kde_bandwidth.
struct Grid2 {
    Eigen::VectorXd x, y;
    Eigen::MatrixXd density;  // density(i, j) at (x[i], y[j])
};
Grid2 kde2d(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& y, int points = 48);

// Highest-density levels: for each mass p, the density value whose upper level set holds
// the fraction p of the grid's total (Riemann sums over the cells).
std::vector<double> hpd_levels(const Grid2& grid, const std::vector<double>& masses);

// The parameter pairs to draw: all pairs when there are at most `all_up_to` parameters,
// else the `most` pairs with the largest absolute correlation over the pooled draws.
std::vector<std::pair<int, int>> choose_pairs(const std::vector<Eigen::MatrixXd>& chains, int all_up_to = 5, int most = 6);

struct PlotInput {
    std::string title;                   // the model's name, in the page titles
    std::vector<std::string> names;      // w[1], W[2,3]
    std::vector<Eigen::MatrixXd> chains;  // draws × parameters, one per chain, same shape
    std::vector<double> vb_mean, vb_sd;  // the variational marginals, or empty
};

struct PlotFiles {
    std::vector<std::string> images;   // PNG paths written
    std::vector<std::string> scripts;  // gnuplot scripts written
};

// Writes the data files and scripts into dir (created if needed), then runs gnuplot on each
// script. Throws vbn::Error: usage when gnuplot is not installed (after writing the scripts,
// the message says what to install), io when a file cannot be written or gnuplot fails.
PlotFiles write_plots(const PlotInput& input, const std::string& dir);

// The path of the gnuplot program found on PATH, or empty.
std::string find_gnuplot();

// The variational means and sds recorded in a CmdStan CSV file's comments by `vbn fit`
// (`# vb_mean = m1, m2, …` and `# vb_sd = …`, in column order); empty if absent.
std::pair<std::vector<double>, std::vector<double>> parse_vb_comments(const std::string& mean_value,
                                                                      const std::string& sd_value, std::size_t parameters);

}  // namespace vbn::plot
