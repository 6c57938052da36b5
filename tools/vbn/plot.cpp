#include "tools/vbn/plot.hpp"

#include "runtime/error.hpp"
#include "runtime/report/output_csv.hpp"
#include "runtime/report/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <numeric>
#include <sstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace vbn::plot {

namespace fs = std::filesystem;

namespace {

// Linear-interpolation quantile of sorted values (R's type 7).
double sorted_quantile(const std::vector<double>& v, double p) {
    const double h = (static_cast<double>(v.size()) - 1) * p;
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const std::size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

double sd_of(const Eigen::Ref<const Eigen::VectorXd>& x) {
    if (x.size() < 2) return 0;
    const double m = x.mean();
    return std::sqrt((x.array() - m).square().sum() / static_cast<double>(x.size() - 1));
}

Eigen::MatrixXd pooled(const std::vector<Eigen::MatrixXd>& chains) {
    Eigen::Index rows = 0;
    for (const auto& c : chains) rows += c.rows();
    Eigen::MatrixXd all(rows, chains.empty() ? 0 : chains.front().cols());
    Eigen::Index at = 0;
    for (const auto& c : chains) {
        all.middleRows(at, c.rows()) = c;
        at += c.rows();
    }
    return all;
}

}  // namespace

Histogram histogram(const Eigen::Ref<const Eigen::VectorXd>& x, int bins) {
    Histogram h;
    std::vector<double> v;
    v.reserve(static_cast<std::size_t>(x.size()));
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        if (std::isfinite(x[i])) v.push_back(x[i]);
        else ++h.dropped;
    }
    if (v.empty()) return h;
    std::sort(v.begin(), v.end());
    const double lo = v.front(), hi = v.back();
    const auto n = static_cast<double>(v.size());
    if (bins <= 0) {
        const double iqr = sorted_quantile(v, 0.75) - sorted_quantile(v, 0.25);
        const double fd = 2 * iqr * std::cbrt(1 / n);
        bins = fd > 0 && hi > lo ? static_cast<int>(std::ceil((hi - lo) / fd)) : 20;
        bins = std::clamp(bins, 20, 60);
    }
    if (hi > lo) {
        h.lo = lo;
        h.width = (hi - lo) / bins;
    } else {
        h.width = 1.0 / bins;
        h.lo = lo - 0.5;
    }
    h.count.assign(static_cast<std::size_t>(bins), 0);
    for (double value : v) {
        const auto b = static_cast<long>(std::floor((value - h.lo) / h.width));
        ++h.count[static_cast<std::size_t>(std::clamp<long>(b, 0, bins - 1))];
    }
    for (long c : h.count) h.density.push_back(static_cast<double>(c) / (n * h.width));
    return h;
}

Eigen::MatrixXd rank_counts(const std::vector<Eigen::VectorXd>& chains, int bins) {
    if (bins < 1) throw std::invalid_argument("rank_counts: bins must be at least 1");
    std::vector<std::pair<double, int>> all;  // value, chain
    for (std::size_t c = 0; c < chains.size(); ++c)
        for (Eigen::Index i = 0; i < chains[c].size(); ++i) all.emplace_back(chains[c][i], static_cast<int>(c));
    // NaN last, so that the ordering is total.
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        if (std::isnan(a.first) || std::isnan(b.first)) return !std::isnan(a.first) && std::isnan(b.first);
        return a.first < b.first;
    });
    Eigen::MatrixXd counts = Eigen::MatrixXd::Zero(bins, static_cast<Eigen::Index>(chains.size()));
    const auto n = static_cast<double>(all.size());
    std::size_t i = 0;
    while (i < all.size()) {
        std::size_t j = i + 1;
        while (j < all.size() && (all[j].first == all[i].first || (std::isnan(all[j].first) && std::isnan(all[i].first)))) ++j;
        const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // average of ranks i+1..j
        const int b = std::min(bins - 1, static_cast<int>(std::floor((rank - 0.5) * bins / n)));
        for (std::size_t k = i; k < j; ++k) counts(b, all[k].second) += 1;
        i = j;
    }
    return counts;
}

double kde_bandwidth(const Eigen::Ref<const Eigen::VectorXd>& x) {
    if (x.size() < 2) return 1e-3;
    std::vector<double> v(x.data(), x.data() + x.size());
    std::sort(v.begin(), v.end());
    const double iqr = sorted_quantile(v, 0.75) - sorted_quantile(v, 0.25);
    double s = sd_of(x);
    if (iqr > 0) s = std::min(s, iqr / 1.349);
    if (!(s > 0)) s = std::max(1e-3, 1e-3 * std::abs(x.mean()));
    return s * std::pow(static_cast<double>(x.size()), -1.0 / 6.0);
}

Grid2 kde2d(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& y, int points) {
    if (x.size() != y.size() || x.size() < 2 || points < 2) throw std::invalid_argument("kde2d: needs two samples of equal size >= 2");
    const auto n = static_cast<double>(x.size());
    const auto axis = [&](const Eigen::Ref<const Eigen::VectorXd>& v, double& h) {
        h = kde_bandwidth(v);
        const double lo = v.minCoeff() - 3 * h, hi = v.maxCoeff() + 3 * h;
        return Eigen::VectorXd::LinSpaced(points, lo, hi).eval();
    };
    double hx = 0, hy = 0;
    Grid2 g;
    g.x = axis(x, hx);
    g.y = axis(y, hy);
    // The product kernel is separable: density = Kx Kyᵀ / (n hx hy 2π), Kx(i, k) = φ((x_i - x_k)/hx).
    Eigen::MatrixXd kx(points, x.size()), ky(points, y.size());
    for (Eigen::Index k = 0; k < x.size(); ++k) {
        kx.col(k) = (-0.5 * ((g.x.array() - x[k]) / hx).square()).exp();
        ky.col(k) = (-0.5 * ((g.y.array() - y[k]) / hy).square()).exp();
    }
    g.density = kx * ky.transpose() / (n * hx * hy * 2 * std::numbers::pi);
    return g;
}

std::vector<double> hpd_levels(const Grid2& grid, const std::vector<double>& masses) {
    std::vector<double> v(grid.density.data(), grid.density.data() + grid.density.size());
    std::sort(v.begin(), v.end(), std::greater<>());
    const double total = std::accumulate(v.begin(), v.end(), 0.0);
    std::vector<double> levels;
    for (double p : masses) {
        double sum = 0;
        double level = v.empty() ? 0 : v.back();
        for (double d : v) {
            sum += d;
            if (sum >= p * total) {
                level = d;
                break;
            }
        }
        levels.push_back(level);
    }
    return levels;
}

std::vector<std::pair<int, int>> choose_pairs(const std::vector<Eigen::MatrixXd>& chains, int all_up_to, int most) {
    std::vector<std::pair<int, int>> pairs;
    if (chains.empty()) return pairs;
    const int d = static_cast<int>(chains.front().cols());
    for (int i = 0; i < d; ++i)
        for (int j = i + 1; j < d; ++j) pairs.emplace_back(i, j);
    if (d <= all_up_to) return pairs;
    const Eigen::MatrixXd all = pooled(chains);
    const Eigen::MatrixXd centred = all.rowwise() - all.colwise().mean();
    const Eigen::MatrixXd cov = centred.transpose() * centred;
    const auto corr = [&](const std::pair<int, int>& p) {
        const double den = std::sqrt(cov(p.first, p.first) * cov(p.second, p.second));
        const double r = den > 0 ? std::abs(cov(p.first, p.second)) / den : 0;
        return std::isfinite(r) ? r : 0;
    };
    std::stable_sort(pairs.begin(), pairs.end(), [&](const auto& a, const auto& b) { return corr(a) > corr(b); });
    pairs.resize(static_cast<std::size_t>(std::min<int>(most, static_cast<int>(pairs.size()))));
    std::sort(pairs.begin(), pairs.end());
    return pairs;
}

std::pair<std::vector<double>, std::vector<double>> parse_vb_comments(const std::string& mean_value, const std::string& sd_value,
                                                                      std::size_t parameters) {
    const auto numbers = [](const std::string& text) {
        std::vector<double> out;
        std::stringstream ss(text);
        std::string item;
        while (std::getline(ss, item, ',')) {
            char* end = nullptr;
            const double v = std::strtod(item.c_str(), &end);
            while (end && *end == ' ') ++end;
            if (end == item.c_str() || (end && *end != '\0')) return std::vector<double>{};
            out.push_back(v);
        }
        return out;
    };
    auto m = numbers(mean_value), s = numbers(sd_value);
    if (m.size() != parameters || s.size() != parameters) return {};
    return {std::move(m), std::move(s)};
}

std::string find_gnuplot() {
    const char* path = std::getenv("PATH");
    std::stringstream ss(path ? path : "");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
        if (dir.empty()) continue;
        const std::string candidate = dir + "/gnuplot";
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

namespace {

constexpr int panels_per_page = 9;
constexpr int columns = 3;

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write '{}'", path.string()));
    f << text;
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write '{}' (disk full?)", path.string()));
}

// A number as gnuplot reads it (NaN is a missing point).
std::string num(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Inf" : "-Inf";
    return fmt::format("{}", v);
}

// A string literal in a gnuplot script.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
}

const char* const chain_colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                     "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string chain_colour(int c) { return chain_colours[c % 10]; }

// The script's start: terminal and page layout for `count` panels, nine a page.
struct Pages {
    std::string script;
    std::vector<std::string> images;
    int count = 0, done = 0, page_rows = 0;
    std::string kind, title;
    double panel_width = 420, panel_height = 300;

    Pages(std::string kind_, std::string title_, int count_, const std::string& note)
        : count(count_), kind(std::move(kind_)), title(std::move(title_)) {
        script = fmt::format(
            "# {}: written by vbn; edit and rerun with `gnuplot {}.gp` in this directory.\n"
            "set encoding utf8\n"
            "set style line 100 lc rgb '#dddddd' lw 1\n"
            "set grid back ls 100\n"
            "set border 3\nset tics nomirror\n",
            note, kind);
    }
    // Before each panel: a new page every nine panels.
    void next_panel() {
        if (done % panels_per_page == 0) {
            if (done > 0) script += "unset multiplot\n";
            const int on_page = std::min(panels_per_page, count - done);
            const int cols = std::min(columns, on_page);
            page_rows = (on_page + cols - 1) / cols;
            const int page = done / panels_per_page + 1;
            const std::string image = fmt::format("{}_{}.png", kind, page);
            images.push_back(image);
            const int pages = (count + panels_per_page - 1) / panels_per_page;
            script += fmt::format(
                "set terminal pngcairo size {},{} font 'Sans,9' noenhanced\nset output {}\n"
                "set multiplot layout {},{} title {} font 'Sans,11'\n",
                std::max(640, static_cast<int>(panel_width * cols)), static_cast<int>(panel_height * page_rows + 30), quoted(image), page_rows,
                cols, quoted(pages > 1 ? fmt::format("{} (page {} of {})", title, page, pages) : title));
        }
        ++done;
    }
    std::string finish() {
        if (done > 0) script += "unset multiplot\nset output\n";
        return script;
    }
};

// draws.dat: one block per chain (separated by two blank lines, gnuplot's `index`), columns
// iteration then each parameter.
std::string draws_data(const PlotInput& in) {
    std::string s = "# iteration";
    for (const auto& n : in.names) s += " " + csv_column_name(n);
    s += '\n';
    for (std::size_t c = 0; c < in.chains.size(); ++c) {
        if (c > 0) s += "\n\n";
        s += fmt::format("# chain {}\n", c + 1);
        const auto& d = in.chains[c];
        for (Eigen::Index i = 0; i < d.rows(); ++i) {
            s += std::to_string(i + 1);
            for (Eigen::Index k = 0; k < d.cols(); ++k) s += " " + num(d(i, k));
            s += '\n';
        }
    }
    return s;
}

std::string trace_script(const PlotInput& in) {
    const int d = static_cast<int>(in.names.size());
    const int chains = static_cast<int>(in.chains.size());
    Pages p("trace", fmt::format("{}: trace plots, one line per chain", in.title), d, "trace plots from draws.dat");
    p.script += "set offsets graph 0, graph 0, graph 0.3, graph 0  # room for the key above the lines\n";
    for (int k = 0; k < d; ++k) {
        p.next_panel();
        std::string plot;
        for (int c = 0; c < chains; ++c)
            plot += fmt::format("{}'draws.dat' index {} using 1:{} with lines lw 1 lc rgb '{}' title 'chain {}'",
                                c == 0 ? "plot " : ", \\\n     ", c, k + 2, chain_colour(c), c + 1);
        p.script += fmt::format("set title {}\nset xlabel 'iteration'\nset ylabel {}\n{}\n{}\n", quoted(in.names[k]),
                                quoted(in.names[k]), k % panels_per_page == 0 ? "set key top right horizontal samplen 1 opaque maxcols 2" : "unset key",
                                plot);
    }
    return p.finish();
}

std::string density_data(const PlotInput& in, std::vector<Histogram>& hists) {
    const Eigen::MatrixXd all = pooled(in.chains);
    std::string s = "# per parameter (gnuplot index k): bin centre, density, bin width\n";
    for (Eigen::Index k = 0; k < all.cols(); ++k) {
        hists.push_back(histogram(all.col(k)));
        const Histogram& h = hists.back();
        s += fmt::format("{}# {}\n", k > 0 ? "\n\n" : "", in.names[static_cast<std::size_t>(k)]);
        for (std::size_t b = 0; b < h.density.size(); ++b)
            s += fmt::format("{} {} {}\n", num(h.lo + (static_cast<double>(b) + 0.5) * h.width), num(h.density[b]), num(h.width));
        if (h.density.empty()) s += "NaN NaN NaN\n";
    }
    return s;
}

std::string density_script(const PlotInput& in, const std::vector<Histogram>& hists) {
    const int d = static_cast<int>(in.names.size());
    const bool vb = in.vb_mean.size() == in.names.size() && in.vb_sd.size() == in.names.size();
    Pages p("density",
            fmt::format("{}: marginal posteriors, MCMC histogram{}", in.title,
                        vb ? " with the variational Gaussian" : ""),
            d, "marginal densities from density.dat");
    p.script +=
        "gauss(x, m, s) = exp(-0.5 * ((x - m) / s)**2) / (s * sqrt(2 * pi))\n"
        "set style fill solid 0.6 border lc rgb '#5b7fb0'\nset samples 300\nset yrange [0:*]\n"
        "set offsets graph 0, graph 0, graph 0.15, graph 0  # room for the key above the bars\n";
    for (int k = 0; k < d; ++k) {
        p.next_panel();
        const Histogram& h = hists[static_cast<std::size_t>(k)];
        double lo = h.lo, hi = h.lo + h.width * static_cast<double>(std::max<std::size_t>(h.count.size(), 1));
        const bool gauss = vb && std::isfinite(in.vb_mean[k]) && in.vb_sd[k] > 0 && std::isfinite(in.vb_sd[k]);
        if (gauss) {
            lo = std::min(lo, in.vb_mean[k] - 3.5 * in.vb_sd[k]);
            hi = std::max(hi, in.vb_mean[k] + 3.5 * in.vb_sd[k]);
        }
        const double pad = 0.02 * (hi - lo);
        std::string plot = fmt::format("plot 'density.dat' index {} using 1:2:3 with boxes lc rgb '#a9c4eb' title 'MCMC'", k);
        if (gauss)
            plot += fmt::format(", \\\n     gauss(x, {}, {}) with lines lw 2 lc rgb '#c0392b' title 'variational'", num(in.vb_mean[k]),
                                num(in.vb_sd[k]));
        p.script += fmt::format("set title {}\nset xlabel {}\nset ylabel 'density'\nset xrange [{}:{}]\n{}\n{}\n",
                                quoted(in.names[k]), quoted(in.names[k]), num(lo - pad), num(hi + pad),
                                k % panels_per_page == 0 ? "set key top right samplen 2 opaque" : "unset key", plot);
    }
    return p.finish();
}

int rank_bins(long draws_per_chain) { return static_cast<int>(std::clamp<long>(draws_per_chain / 10, 5, 20)); }

std::string rank_data(const PlotInput& in) {
    const int d = static_cast<int>(in.names.size());
    const int bins = rank_bins(in.chains.front().rows());
    std::string s =
        "# per parameter (gnuplot index k): left end of the rank bin (fraction of all draws), count per chain;\n"
        "# the last row repeats the last bin's counts at 1 to close the steps\n";
    for (int k = 0; k < d; ++k) {
        std::vector<Eigen::VectorXd> cols;
        for (const auto& c : in.chains) cols.emplace_back(c.col(k));
        const Eigen::MatrixXd counts = rank_counts(cols, bins);
        s += fmt::format("{}# {}\n", k > 0 ? "\n\n" : "", in.names[static_cast<std::size_t>(k)]);
        for (int b = 0; b <= bins; ++b) {
            s += num(static_cast<double>(b) / bins);
            for (Eigen::Index c = 0; c < counts.cols(); ++c) s += " " + num(counts(std::min(b, bins - 1), c));
            s += '\n';
        }
    }
    return s;
}

std::string rank_script(const PlotInput& in) {
    const int d = static_cast<int>(in.names.size());
    const int chains = static_cast<int>(in.chains.size());
    const int bins = rank_bins(in.chains.front().rows());
    const double expected = static_cast<double>(in.chains.front().rows()) / bins;
    Pages p("rank",
            fmt::format("{}: rank plots, each chain's share of the pooled ranks (flat when the chains mix)", in.title), d,
            "rank plots from ranks.dat");
    p.script += fmt::format(
        "set xrange [0:1]\nset yrange [0:*]\nset xtics 0.25\nexpected = {}\n"
        "set offsets graph 0, graph 0, graph 0.3, graph 0  # room for the key above the steps\n",
        num(expected));
    for (int k = 0; k < d; ++k) {
        p.next_panel();
        std::string plot = "plot expected with lines dt 2 lw 1.5 lc rgb 'black' title 'uniform'";
        for (int c = 0; c < chains; ++c)
            plot += fmt::format(", \\\n     'ranks.dat' index {} using 1:{} with steps lw 1.5 lc rgb '{}' title 'chain {}'", k, c + 2,
                                chain_colour(c), c + 1);
        p.script += fmt::format("set title {}\nset xlabel 'rank / number of draws'\nset ylabel 'draws in bin'\n{}\n{}\n",
                                quoted(in.names[k]), k % panels_per_page == 0 ? "set key top center horizontal samplen 1 opaque maxcols 3" : "unset key",
                                plot);
    }
    return p.finish();
}

// pairs.gp and pair_K.dat: points from draws.dat (thinned to about 1000 a pair) and the
// contours of a KDE of at most 2000 draws, which gnuplot first traces into pair_K.contour.
std::string pairs_script(const PlotInput& in, const std::vector<std::pair<int, int>>& pairs, const fs::path& dir) {
    const Eigen::MatrixXd all = pooled(in.chains);
    const long thin = std::max<long>(1, static_cast<long>(all.rows()) / 1000);
    const Eigen::Index step = std::max<Eigen::Index>(1, all.rows() / 2000);
    const std::vector<double> masses{0.5, 0.8, 0.95};
    Pages p("pairs",
            fmt::format("{}: pairs, draws with the 50/80/95% density contours", in.title),
            static_cast<int>(pairs.size()), "pair plots from draws.dat and pair_K.dat");
    p.panel_width = 400;
    p.panel_height = 340;
    p.script += "# The contours of each kernel density grid, traced into pair_K.contour first.\n"
                "set contour base\nunset surface\nset cntrparam linear\n";
    std::vector<bool> has_contour;
    for (std::size_t q = 0; q < pairs.size(); ++q) {
        const auto [i, j] = pairs[q];
        Eigen::VectorXd x((all.rows() + step - 1) / step), y(x.size());
        Eigen::Index n = 0;
        for (Eigen::Index r = 0; r < all.rows(); r += step)
            if (std::isfinite(all(r, i)) && std::isfinite(all(r, j))) {
                x[n] = all(r, i);
                y[n] = all(r, j);
                ++n;
            }
        has_contour.push_back(n >= 2);
        if (n < 2) continue;
        const Grid2 g = kde2d(x.head(n), y.head(n));
        std::string s = fmt::format("# kernel density of ({}, {}): x y density, one block per x\n", in.names[i], in.names[j]);
        for (Eigen::Index a = 0; a < g.x.size(); ++a) {
            for (Eigen::Index b = 0; b < g.y.size(); ++b) s += fmt::format("{} {} {}\n", num(g.x[a]), num(g.y[b]), num(g.density(a, b)));
            s += '\n';
        }
        write_file(dir / fmt::format("pair_{}.dat", q + 1), s);
        const auto levels = hpd_levels(g, masses);
        std::string list;
        for (auto it = levels.rbegin(); it != levels.rend(); ++it) list += (list.empty() ? "" : ",") + num(*it);
        p.script += fmt::format("set cntrparam levels discrete {}\nset table 'pair_{}.contour'\nsplot 'pair_{}.dat' using 1:2:3 with lines\nunset table\n",
                                list, q + 1, q + 1);
    }
    p.script += "unset contour\nset surface\n";
    for (std::size_t q = 0; q < pairs.size(); ++q) {
        const auto [i, j] = pairs[q];
        p.next_panel();
        p.script += fmt::format(
            "set title {}\nset xlabel {}\nset ylabel {}\nunset key\n"
            "plot 'draws.dat' every {} using {}:{} with points pt 7 ps 0.25 lc rgb '#707b8c' notitle{}\n",
            quoted(fmt::format("{} and {}", in.names[i], in.names[j])), quoted(in.names[i]), quoted(in.names[j]), thin, i + 2, j + 2,
            has_contour[q] ? fmt::format(", \\\n     'pair_{}.contour' using 1:2 with lines lw 1.5 lc rgb '#c0392b' notitle", q + 1)
                           : std::string());
    }
    return p.finish();
}

void run_gnuplot(const std::string& gnuplot, const fs::path& dir, const std::string& script) {
    const fs::path log = dir / (fs::path(script).stem().string() + ".log");
    const pid_t pid = ::fork();
    if (pid < 0) throw Error(ErrorKind::io, fmt::format("cannot start gnuplot: {}", std::strerror(errno)));
    if (pid == 0) {
        if (::chdir(dir.c_str()) != 0) ::_exit(126);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::close(fd);
        }
        ::execl(gnuplot.c_str(), "gnuplot", script.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw Error(ErrorKind::io, fmt::format("waiting for gnuplot: {}", std::strerror(errno)));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::ifstream l(log);
        std::string text((std::istreambuf_iterator<char>(l)), std::istreambuf_iterator<char>());
        if (text.size() > 2000) text = text.substr(0, 2000) + "…";
        throw Error(ErrorKind::io, fmt::format("gnuplot failed on {} (exit status {}):\n{}", (dir / script).string(),
                                               WIFEXITED(status) ? WEXITSTATUS(status) : -1, text));
    }
    std::error_code ec;
    if (fs::file_size(log, ec) == 0) fs::remove(log, ec);
}

}  // namespace

PlotFiles write_plots(const PlotInput& in, const std::string& dir_name) {
    if (in.chains.empty() || in.names.empty()) throw Error(ErrorKind::usage, "nothing to plot: no draws");
    for (const auto& c : in.chains)
        if (c.cols() != static_cast<Eigen::Index>(in.names.size()) || c.rows() != in.chains.front().rows() || c.rows() == 0)
            throw std::invalid_argument("write_plots: chains must have one column per name and the same number of draws");
    const fs::path dir(dir_name);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw Error(ErrorKind::io, fmt::format("cannot create the plot directory '{}': {}", dir_name, ec.message()));

    write_file(dir / "draws.dat", draws_data(in));
    std::vector<Histogram> hists;
    write_file(dir / "density.dat", density_data(in, hists));
    write_file(dir / "ranks.dat", rank_data(in));
    const std::vector<std::pair<std::string, std::string>> scripts{
        {"trace.gp", trace_script(in)},
        {"density.gp", density_script(in, hists)},
        {"pairs.gp", in.names.size() >= 2 ? pairs_script(in, choose_pairs(in.chains), dir) : std::string()},
        {"rank.gp", rank_script(in)},
    };
    PlotFiles files;
    for (const auto& [name, text] : scripts) {
        if (text.empty()) continue;
        write_file(dir / name, text);
        files.scripts.push_back((dir / name).string());
    }
    const std::string gnuplot = find_gnuplot();
    if (gnuplot.empty())
        throw Error(ErrorKind::usage,
                    fmt::format("gnuplot is not installed (not found on PATH), so no pictures were drawn; install it "
                                "(Debian/Ubuntu: apt-get install gnuplot-nox) and rerun, or run `gnuplot trace.gp` etc. "
                                "in {} where the data files and scripts were written",
                                dir_name));
    for (const auto& [name, text] : scripts) {
        if (text.empty()) continue;
        run_gnuplot(gnuplot, dir, name);
    }
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".png") files.images.push_back(entry.path().string());
    std::sort(files.images.begin(), files.images.end());
    return files;
}

}  // namespace vbn::plot
