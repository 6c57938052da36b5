#include "runtime/report/loo_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace vbn {

namespace {

std::string fixed1(double v) { return std::isnan(v) ? "NA" : fmt::format("{:.1f}", v); }

// Pads every string of a column to its widest (with the header), to the right or left.
std::vector<std::string> pad(std::vector<std::string> column, bool right) {
    std::size_t w = 0;
    for (const auto& s : column) w = std::max(w, s.size());
    for (auto& s : column) s = right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
    return column;
}

std::string rstrip(std::string s) {
    s.erase(s.find_last_not_of(' ') + 1);
    return s;
}

std::string estimates_table(const inference::LooResult& r) {
    const auto names = pad({"", "elpd_loo", "p_loo", "looic"}, false);
    const auto est = pad({"Estimate", fixed1(r.elpd_loo), fixed1(r.p_loo), fixed1(r.looic)}, true);
    const auto se = pad({"SE", fixed1(r.se_elpd_loo), fixed1(r.se_p_loo), fixed1(r.se_looic)}, true);
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) out += names[i] + " " + est[i] + " " + se[i] + "\n";
    return out;
}

// loo's pareto_k_table as print.pareto_k_table shows it (character columns left-aligned).
std::string khat_table(const inference::LooResult& r) {
    std::array<int, 4> count{};
    std::array<double, 4> min_n_eff;
    min_n_eff.fill(std::numeric_limits<double>::infinity());
    for (const auto& p : r.points) {
        const int b = inference::pareto_k_bin(p.pareto_k);
        ++count[static_cast<std::size_t>(b)];
        min_n_eff[static_cast<std::size_t>(b)] = std::min(min_n_eff[static_cast<std::size_t>(b)], p.n_eff);
    }
    const double n = static_cast<double>(r.points.size());
    std::vector<std::string> counts{"Count"}, pct{"Pct.   "}, neff{"Min. n_eff"};
    std::vector<std::string> count_values, pct_values;
    for (std::size_t b = 0; b < 4; ++b) {
        count_values.push_back(fmt::format("{}", count[b]));
        pct_values.push_back(fmt::format("{:.1f}", 100 * count[b] / n));
        neff.push_back(count[b] == 0 ? "NA" : fmt::format("{:.0f}", std::round(min_n_eff[b])));
    }
    for (const auto& s : pad(count_values, true)) counts.push_back(s);
    for (const auto& s : pad(pct_values, true)) pct.push_back(s + "%");
    const auto rows = pad({"", "(-Inf, 0.5]", "(0.5, 0.7]", "(0.7, 1]", "(1, Inf)"}, true);
    const auto labels = pad({"", "(good)", "(ok)", "(bad)", "(very bad)"}, false);
    counts = pad(counts, false);
    pct = pad(pct, false);
    neff = pad(neff, false);
    std::string out = "Pareto k diagnostic values:\n";
    for (std::size_t i = 0; i < 5; ++i)
        out += rstrip(rows[i] + "   " + labels[i] + " " + counts[i] + " " + pct[i] + " " + neff[i]) + "\n";
    if (count[2] + count[3] == 0) out += "\nAll Pareto k estimates are ok (k < 0.7).\n";
    return out;
}

}  // namespace

std::string format_loo(const inference::LooResult& r) {
    std::string out = fmt::format("Computed from {} by {} log-likelihood matrix ({} chain{} of {} draws)\n\n", r.draws,
                                  r.points.size(), r.chains, r.chains == 1 ? "" : "s", r.draws / std::max(r.chains, 1));
    out += estimates_table(r);
    out += "------\n";
    out += "Monte Carlo SE of elpd_loo is " + fixed1(r.mcse_elpd_loo) + ".\n\n";
    const bool all_good = std::all_of(r.points.begin(), r.points.end(),
                                      [](const inference::LooPoint& p) { return inference::pareto_k_bin(p.pareto_k) == 0; });
    out += all_good ? "All Pareto k estimates are good (k < 0.5).\n" : khat_table(r);
    return out;
}

std::string loo_khat_warning(const inference::LooResult& r) {
    std::vector<std::string> rows;
    for (std::size_t i = 0; i < r.points.size(); ++i)
        if (inference::pareto_k_bin(r.points[i].pareto_k) >= 2)
            rows.push_back(fmt::format("{} ({:.2f})", i + 1, r.points[i].pareto_k));
    if (rows.empty()) return {};
    const bool one = rows.size() == 1;
    return fmt::format("Pareto k̂ above 0.7 for {}{}: {} leave-one-out estimate{}, and so elpd_loo, {} unreliable (the "
                       "posterior without {} is too far from the whole posterior for importance sampling)",
                       one ? "data row " : fmt::format("{} data rows: ", rows.size()), fmt::join(rows, ", "),
                       one ? "its" : "their", one ? "" : "s", one ? "is" : "are", one ? "the row" : "one of them");
}

}  // namespace vbn
