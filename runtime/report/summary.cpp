// Summary rows, the summary table, the summary JSON and `vbn summary`.
#include "runtime/report/summary.hpp"

#include "inference/diagnostics.hpp"
#include "inference/parallel.hpp"
#include "runtime/error.hpp"
#include "runtime/report/output_csv.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>

namespace vbn {
namespace {

constexpr double kRhatLimit = summary_rhat_limit;
constexpr double kRhatModes = 1.1;  // above it, with hidden nodes, the warning explains modes
constexpr double kEssPerChain = summary_ess_per_chain;
constexpr double kAcceptanceFloor = 0.05;
constexpr std::size_t kNamesListed = 8;

std::string na_or(double v, const char* spec) {
    if (std::isnan(v)) return "NA";
    return fmt::format(fmt::runtime(spec), v);
}

// "w[1], w[2] and 3 more"
template <class F>
std::string list_rows(const std::vector<const SummaryRow*>& rows, F&& describe) {
    std::string out;
    for (std::size_t k = 0; k < rows.size() && k < kNamesListed; ++k) {
        if (k > 0) out += ", ";
        out += describe(*rows[k]);
    }
    if (rows.size() > kNamesListed) out += fmt::format(" and {} more", rows.size() - kNamesListed);
    return out;
}

std::string parameters_word(std::size_t n) { return n == 1 ? "1 parameter" : fmt::format("{} parameters", n); }

nlohmann::ordered_json number_or_null(double v) {
    if (!std::isfinite(v)) return nullptr;
    return v;
}

template <class T>
nlohmann::ordered_json optional_or_null(const std::optional<T>& v) {
    if (!v) return nullptr;
    if constexpr (std::is_floating_point_v<T>) return number_or_null(*v);
    else return *v;
}

// The 1-based chains whose draws (a column of x each) are all equal.
std::vector<int> stuck_chains(const Eigen::MatrixXd& x) {
    std::vector<int> out;
    for (Eigen::Index c = 0; c < x.cols(); ++c)
        if ((x.col(c).array() == x(0, c)).all()) out.push_back(static_cast<int>(c) + 1);
    return out;
}

}  // namespace

std::vector<SummaryRow> summarize(const std::vector<std::string>& names, const std::vector<Eigen::MatrixXd>& chains,
                                  int threads) {
    if (chains.empty()) throw Error(ErrorKind::data, "no chains to summarise");
    const Eigen::Index draws = chains.front().rows(), params = chains.front().cols();
    for (std::size_t c = 0; c < chains.size(); ++c) {
        if (chains[c].rows() != draws || chains[c].cols() != params)
            throw Error(ErrorKind::data, fmt::format("chain {} has {} draws of {} parameters, chain 1 has {} of {}", c + 1,
                                                     chains[c].rows(), chains[c].cols(), draws, params));
    }
    if (static_cast<Eigen::Index>(names.size()) != params)
        throw Error(ErrorKind::data, fmt::format("{} names for {} parameter columns", names.size(), params));
    return summarize(names, chains.size(), draws,
                     [&](std::size_t c, Eigen::Index p) { return chains[c].col(p).data(); }, threads);
}

std::vector<SummaryRow> summarize(const std::vector<std::string>& names, std::size_t chains, Eigen::Index draws,
                                  const std::function<const double*(std::size_t c, Eigen::Index p)>& column,
                                  int threads) {
    if (chains == 0) throw Error(ErrorKind::data, "no chains to summarise");
    if (draws == 0) throw Error(ErrorKind::data, "the chains hold no draws");
    const auto params = static_cast<Eigen::Index>(names.size());

    std::vector<SummaryRow> rows(names.size());
    // One parameter at a time to whichever thread is free: a thread that starts late then
    // leaves its share to the others instead of adding it to the wall time.
    std::vector<Eigen::MatrixXd> scratch(static_cast<std::size_t>(std::max(threads, 1)));
    inference::parallel_chunks(threads, static_cast<std::size_t>(params), 1, [&](std::size_t begin, std::size_t end, std::size_t part) {
        Eigen::MatrixXd& x = scratch[part];
        x.resize(draws, static_cast<Eigen::Index>(chains));
        for (std::size_t p = begin; p < end; ++p) {
            for (std::size_t c = 0; c < chains; ++c)
                x.col(static_cast<Eigen::Index>(c)) = Eigen::Map<const Eigen::VectorXd>(column(c, static_cast<Eigen::Index>(p)), draws);
            const inference::ScalarDiagnostics d = inference::diagnose(x);
            rows[p] = SummaryRow{names[p], d.mean, d.sd, d.mcse_mean, d.q5, d.q50, d.q95, d.ess_bulk,
                                 d.ess_tail, d.rhat, d.mcse_q5, d.mcse_q95, d.constant, d.nonfinite};
            if (!d.constant && !d.nonfinite && chains > 1 && draws > 1) rows[p].stuck_chains = stuck_chains(x);
        }
    });
    return rows;
}

std::vector<inference::KernelStats> merge_kernel_stats(const std::vector<std::vector<inference::KernelStats>>& per_chain) {
    std::vector<inference::KernelStats> out;
    for (const auto& chain : per_chain) {
        for (const auto& k : chain) {
            auto it = std::find_if(out.begin(), out.end(), [&](const auto& o) { return o.name == k.name; });
            if (it == out.end()) {
                out.push_back(k);
            } else {
                it->proposed += k.proposed;
                it->accepted += k.accepted;
            }
        }
    }
    return out;
}

namespace {

// What to try when a sampler barely moves: another kernel, or for NUTS smaller steps.
std::string sampler_remedy(const RunFacts& facts) {
    if (facts.method == "nuts") return "raise --adapt-delta (e.g. 0.95) so that NUTS takes smaller steps";
    if (facts.method.empty()) return "if the run came from vbn fit, try --method nuts";
    return "try --method nuts, which moves every weight by gradient steps";
}

// Why chains disagree, and what to do. With hidden nodes the likelihood is unchanged when a
// hidden node and the signs of its weights flip together, so chains may sit in mirror-image
// modes (a relabelling), or the variational fit that starts them may have found a minor mode.
// Chains in different modes give an R-hat far above 1.1 (1.5-2.7 on the models where this was
// seen); just above 1.01 is the mark of chains that are merely too short.
std::string rhat_advice(const RunFacts& facts, double worst) {
    if (!facts.hidden || worst <= kRhatModes) return "run longer chains or check the model.";
    if (facts.relabel.rule == "pivot")
        return std::string("the draws were relabelled to one labeling (see Symmetry above), so chains this far apart "
                           "sit in different modes, not different labelings: run longer chains, or start from the best "
                           "of K variational fits with --restarts K (e.g. 8)") +
               (facts.method != "nuts" ? ", or try --method nuts." : ".");
    if (!facts.symmetry.empty())
        return std::string("the model's posterior has equivalent labelings (see Symmetry above), and chains this far "
                           "apart sit in different ones: R-hat and the means of parameters a relabelling changes mix "
                           "them. ") +
               (facts.relabel.why == "relabel = none"
                    ? "Relabel the draws to one labeling (vbn fit --relabel pivot), or summarise "
                    : "Summarise ") +
               "quantities that no relabelling changes (predictions, the evidence, |weight| of a flipped node).";
    std::string advice = "the model has hidden nodes, and chains this far apart usually sit in different modes. If "
                         "their means of these parameters differ only in sign, they are relabellings of a hidden node "
                         "(flipping it and the signs of its weights leaves the likelihood unchanged): summarise "
                         "sign-free quantities. Otherwise start from the best of K variational fits with --restarts K "
                         "(e.g. 8)";
    if (facts.method != "nuts") advice += ", or try --method nuts";
    return advice + ".";
}

// The Symmetry line: the labelings, and whether the draws were relabelled to one of them.
std::string symmetry_line(const RunFacts& facts) {
    const RelabelFacts& r = facts.relabel;
    if (r.rule == "pivot")
        return fmt::format("Symmetry: {}; draws relabelled to one labeling (pivot): {} of {} ({:.0f}%)\n", facts.symmetry,
                           r.relabelled, r.draws,
                           100.0 * static_cast<double>(r.relabelled) / static_cast<double>(std::max(r.draws, 1L)));
    const std::string why = r.why.empty() ? "" : " (" + r.why + ")";
    return fmt::format("Symmetry: {}; not relabelled{}: chains may sit in different labelings\n", facts.symmetry, why);
}

// The Minor modes line: each flipped copy some draw reached or the importance estimate
// weighs at kMinListedMass or more, with its share of the draws ± its Monte Carlo error and
// the importance estimate ± its own (with its k̂ where that is above 0.7, and the estimate
// not to be trusted), then how many copies are left out (with 8 flips there are 255; the JSON
// lists every one).
constexpr double kMinListedMass = 0.0005;
std::string modes_line(const std::vector<ModeMass>& modes) {
    std::string out = "Minor modes (flipped copies: share of draws +- mcse; importance sampling +- mcse):";
    std::size_t listed = 0;
    for (const ModeMass& m : modes) {
        const bool weighed = std::isfinite(m.importance);
        if (m.mass <= 0 && !(weighed && m.importance >= kMinListedMass)) continue;
        out += fmt::format("{} {} {:.2f}% +- {:.2f}%", listed++ ? ";" : "", m.flip, 100 * m.mass, 100 * m.mcse);
        if (weighed) out += fmt::format(", {:.2f}% +- {:.2f}%", 100 * m.importance, 100 * m.importance_mcse);
        if (weighed && m.importance_khat > 0.7) out += fmt::format(" (k-hat {:.2f}: unreliable)", m.importance_khat);
    }
    const std::size_t empty = modes.size() - listed;
    const char* copies = empty == 1 ? "copy" : "copies";
    if (empty > 0)
        out += listed == 0 ? fmt::format(" none reached ({} {})", empty, copies)
                           : fmt::format("; {} other {} not reached", empty, copies);
    // Copies left out that importance sampling weighed: say how little they hold.
    const bool all_weighed = std::all_of(modes.begin(), modes.end(), [](const ModeMass& m) { return std::isfinite(m.importance); });
    if (empty > 0 && all_weighed) out += fmt::format(", each below {:.2f}% by importance sampling", 100 * kMinListedMass);
    return out + '\n';
}

// A chain whose draws of some parameters never changed while the other chains' did: stuck
// where it started (every proposal rejected), which R-hat and ESS cannot diagnose well.
void stuck_chain_warnings(const std::vector<SummaryRow>& rows, const RunFacts& facts, std::vector<std::string>& out) {
    std::map<int, std::vector<const SummaryRow*>> by_chain;
    for (const auto& r : rows)
        for (int c : r.stuck_chains) by_chain[c].push_back(&r);
    for (const auto& [chain, stuck] : by_chain)
        out.push_back(fmt::format("Chain {} never moved {} ({}) while the other chains did: it is stuck where it started, "
                                  "and its draws distort the summary (tail-ESS can be NA); {}.",
                                  chain, parameters_word(stuck.size()), list_rows(stuck, [](auto& r) { return r.name; }),
                                  sampler_remedy(facts)));
}

void sampler_warnings(const RunFacts& facts, std::vector<std::string>& out) {
    for (const auto& k : facts.kernels) {
        // A symmetry jump's rate is about twice the minor copies' mass (docs/methods.md,
        // "Symmetry jumps"): low when they are light, which is no fault of the sampler.
        if (k.name == "symmetry jump") continue;
        if (k.proposed > 0 && k.rate() < kAcceptanceFloor)
            out.push_back(fmt::format(
                "Kernel {} accepted {:.1f}% of its proposals (below {:.0f}%): its proposals are too wide or far from the "
                "posterior, so the chain barely moves; {}.",
                k.name, 100 * k.rate(), 100 * kAcceptanceFloor, sampler_remedy(facts)));
    }
    if (facts.kernels.empty() && facts.mean_accept_stat && *facts.mean_accept_stat < kAcceptanceFloor)
        out.push_back(fmt::format("The mean acceptance statistic is {:.1f}% (below {:.0f}%): the chain barely moves; {}.",
                                  100 * *facts.mean_accept_stat, 100 * kAcceptanceFloor, sampler_remedy(facts)));
    if (facts.divergent > 0)
        out.push_back(fmt::format(
            "{} divergent transition{} after warmup: the step size is too large for the posterior's curvature there, so "
            "the draws may be biased.",
            facts.divergent, facts.divergent == 1 ? "" : "s"));
}

void ess_warnings(const std::vector<const SummaryRow*>& low, double SummaryRow::*ess, const RunFacts& facts,
                  const char* kind, const char* what, std::vector<std::string>& out) {
    if (low.empty()) return;
    const double floor = kEssPerChain * std::max(1, facts.chains);
    const std::string floor_text =
        facts.chains > 1 ? fmt::format("{:.0f} for {} chains", floor, facts.chains) : fmt::format("{:.0f}", floor);
    out.push_back(fmt::format("{}-ESS below {} per chain ({}) for {} ({}): {} unreliable; run more draws.", kind,
                              kEssPerChain, floor_text, parameters_word(low.size()),
                              list_rows(low, [&](auto& r) { return fmt::format("{} {:.0f}", r.name, r.*ess); }),
                              what));
}

}  // namespace

std::vector<std::string> summary_warnings(const std::vector<SummaryRow>& rows, const RunFacts& facts) {
    std::vector<std::string> out;
    std::vector<const SummaryRow*> high_rhat, low_bulk, low_tail, constant, nonfinite;
    const double ess_floor = kEssPerChain * std::max(1, facts.chains);
    double worst_rhat = 0;
    for (const auto& r : rows) {
        if (r.nonfinite) nonfinite.push_back(&r);
        else if (r.constant) constant.push_back(&r);
        if (r.rhat > kRhatLimit) high_rhat.push_back(&r);
        if (r.rhat > worst_rhat) worst_rhat = r.rhat;
        if (r.ess_bulk < ess_floor) low_bulk.push_back(&r);
        if (r.ess_tail < ess_floor) low_tail.push_back(&r);
    }
    if (!nonfinite.empty())
        out.push_back(fmt::format("{} had NaN or infinite draws ({}): the sampler failed there; no diagnostic is given.",
                                  parameters_word(nonfinite.size()), list_rows(nonfinite, [](auto& r) { return r.name; })));
    if (!constant.empty())
        out.push_back(fmt::format("{} never moved ({}): constant draws leave R-hat and ESS undefined (NA).",
                                  parameters_word(constant.size()), list_rows(constant, [](auto& r) { return r.name; })));
    stuck_chain_warnings(rows, facts, out);
    if (!high_rhat.empty())
        out.push_back(fmt::format("R-hat above {} for {} ({}): the chains disagree, so they have not converged; {}",
                                  kRhatLimit, parameters_word(high_rhat.size()),
                                  list_rows(high_rhat, [](auto& r) { return fmt::format("{} {:.3f}", r.name, r.rhat); }),
                                  rhat_advice(facts, worst_rhat)));
    ess_warnings(low_bulk, &SummaryRow::ess_bulk, facts, "Bulk", "means and medians are", out);
    ess_warnings(low_tail, &SummaryRow::ess_tail, facts, "Tail", "the 5% and 95% quantiles are", out);
    sampler_warnings(facts, out);
    return out;
}

std::string format_summary(const std::vector<SummaryRow>& rows, const RunFacts& facts) {
    const std::vector<std::string> header{"name", "mean", "sd", "mcse", "5%", "50%", "95%", "ess_bulk", "ess_tail", "rhat"};
    std::vector<std::vector<std::string>> cells;
    cells.reserve(rows.size());
    for (const auto& r : rows) {
        // 4 significant digits for values, 2 for their Monte Carlo error, whole draws for
        // ESS and 3 decimals for R-hat (its warning threshold is 1.01).
        cells.push_back({r.name, na_or(r.mean, "{:.4g}"), na_or(r.sd, "{:.4g}"), na_or(r.mcse_mean, "{:.2g}"),
                         na_or(r.q5, "{:.4g}"), na_or(r.q50, "{:.4g}"), na_or(r.q95, "{:.4g}"),
                         na_or(r.ess_bulk, "{:.0f}"), na_or(r.ess_tail, "{:.0f}"), na_or(r.rhat, "{:.3f}")});
    }
    std::vector<std::size_t> width(header.size());
    for (std::size_t c = 0; c < header.size(); ++c) {
        width[c] = header[c].size();
        for (const auto& row : cells) width[c] = std::max(width[c], row[c].size());
    }
    auto put_row = [&](std::string& out, const std::vector<std::string>& row) {
        out += fmt::format("{:<{}}", row[0], width[0]);
        for (std::size_t c = 1; c < row.size(); ++c) out += fmt::format("  {:>{}}", row[c], width[c]);
        out += '\n';
    };

    std::string out;
    out += fmt::format("Inference for {}: method {}, {} chain{} x {} draws", facts.model.empty() ? "the model" : facts.model,
                       facts.method.empty() ? "unknown" : facts.method, facts.chains, facts.chains == 1 ? "" : "s",
                       facts.draws);
    if (facts.warmup > 0) out += fmt::format(" after {} warmup", facts.warmup);
    out += ".\n\n";
    put_row(out, header);
    for (const auto& row : cells) put_row(out, row);
    out += '\n';

    if (!facts.kernels.empty()) {
        out += "Acceptance:";
        for (std::size_t k = 0; k < facts.kernels.size(); ++k) {
            const auto& s = facts.kernels[k];
            out += fmt::format("{} {} {:.1f}% ({} of {})", k == 0 ? "" : ";", s.name, 100 * s.rate(), s.accepted, s.proposed);
        }
        out += '\n';
    } else if (facts.mean_accept_stat) {
        out += fmt::format("Mean accept_stat__: {:.3f}\n", *facts.mean_accept_stat);
    }
    if (facts.regenerations) out += fmt::format("Regenerations: {}\n", *facts.regenerations);
    if (facts.elbo) out += fmt::format("ELBO: {:.6g}\n", *facts.elbo);
    if (!facts.symmetry.empty()) out += symmetry_line(facts);
    if (!facts.modes.empty()) out += modes_line(facts.modes);
    if (facts.divergent > 0) out += fmt::format("Divergent transitions: {}\n", facts.divergent);
    if (facts.warmup_seconds || facts.sampling_seconds)
        out += fmt::format("Elapsed time: {:.3f} s warmup, {:.3f} s sampling\n", facts.warmup_seconds.value_or(0),
                           facts.sampling_seconds.value_or(0));
    for (std::size_t c = 0; c < facts.chain_seconds.size(); ++c)
        out += fmt::format("Chain {}: {:.3f} s warmup, {:.3f} s sampling\n", c + 1, facts.chain_seconds[c].warmup,
                           facts.chain_seconds[c].sampling);

    const auto warnings = summary_warnings(rows, facts);
    if (!warnings.empty()) {
        out += "\nWarnings:\n";
        for (const auto& w : warnings) out += "  - " + w + '\n';
    }
    return out;
}

nlohmann::ordered_json summary_json(const std::vector<SummaryRow>& rows, const RunFacts& facts) {
    nlohmann::ordered_json doc;
    doc["method"] = facts.method;
    doc["chains"] = facts.chains;
    doc["draws"] = facts.draws;
    doc["elbo"] = optional_or_null(facts.elbo);
    doc["warmup_seconds"] = optional_or_null(facts.warmup_seconds);
    doc["sampling_seconds"] = optional_or_null(facts.sampling_seconds);
    auto& params = doc["parameters"] = nlohmann::ordered_json::array();
    for (const auto& r : rows) {
        nlohmann::ordered_json p;
        p["name"] = r.name;
        p["mean"] = number_or_null(r.mean);
        p["sd"] = number_or_null(r.sd);
        p["mcse_mean"] = number_or_null(r.mcse_mean);
        p["q5"] = number_or_null(r.q5);
        p["q50"] = number_or_null(r.q50);
        p["q95"] = number_or_null(r.q95);
        p["ess_bulk"] = number_or_null(r.ess_bulk);
        p["ess_tail"] = number_or_null(r.ess_tail);
        p["rhat"] = number_or_null(r.rhat);
        params.push_back(std::move(p));
    }
    // Facts beyond docs/design.md's keys, after them.
    doc["warmup"] = facts.warmup;
    doc["divergent"] = facts.divergent;
    doc["regenerations"] = optional_or_null(facts.regenerations);
    auto& acc = doc["acceptance"] = nlohmann::ordered_json::array();
    for (const auto& k : facts.kernels)
        acc.push_back({{"kernel", k.name}, {"accepted", k.accepted}, {"proposed", k.proposed}, {"rate", k.rate()}});
    doc["labelings"] = optional_or_null(facts.labelings);
    const RelabelFacts& relabel = facts.relabel;
    doc["relabel"] = relabel.rule.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(relabel.rule);
    doc["relabelled"] = relabel.rule == "pivot" ? nlohmann::ordered_json(relabel.relabelled) : nlohmann::ordered_json(nullptr);
    if (!facts.phase_seconds.empty()) {
        auto& timings = doc["timings"] = nlohmann::ordered_json::object();
        for (const auto& [phase, seconds] : facts.phase_seconds) timings[phase] = seconds;
    }
    if (!facts.modes.empty()) {
        auto& modes = doc["modes"] = nlohmann::ordered_json::array();
        for (const auto& m : facts.modes)
            modes.push_back({{"flip", m.flip}, {"mass", m.mass}, {"mcse", m.mcse}, {"importance", number_or_null(m.importance)},
                             {"importance_mcse", number_or_null(m.importance_mcse)},
                             {"importance_khat", number_or_null(m.importance_khat)}});
    }
    return doc;
}

std::array<double, 3> VbParameter::marginal_quantiles() const {
    // z_0.95 = Φ⁻¹(0.95): the Gaussian marginals' 5% and 95% quantiles are mean ∓ z sd.
    constexpr double z95 = 1.6448536269514722;
    if (quantiles) return *quantiles;
    return {mean - z95 * sd, mean, mean + z95 * sd};
}

nlohmann::ordered_json vb_summary_json(const std::vector<VbParameter>& parameters, const VbFacts& facts) {
    nlohmann::ordered_json doc;
    doc["method"] = facts.method;
    doc["chains"] = nullptr;
    doc["draws"] = nullptr;
    doc["elbo"] = number_or_null(facts.elbo);
    doc["warmup_seconds"] = nullptr;
    doc["sampling_seconds"] = nullptr;
    auto& params = doc["parameters"] = nlohmann::ordered_json::array();
    for (const auto& v : parameters) {
        nlohmann::ordered_json p;
        p["name"] = v.name;
        p["mean"] = number_or_null(v.mean);
        p["sd"] = number_or_null(v.sd);
        const std::array<double, 3> q = v.marginal_quantiles();
        p["q5"] = number_or_null(q[0]);
        p["q50"] = number_or_null(q[1]);
        p["q95"] = number_or_null(q[2]);
        if (const auto& c = v.corrected) {
            p["vb_mean"] = p["mean"];
            p["vb_sd"] = p["sd"];
            p["corrected_mean"] = number_or_null(c->mean);
            p["corrected_sd"] = number_or_null(c->sd);
            p["corrected_mcse_mean"] = number_or_null(c->mcse_mean);
            p["corrected_q5"] = number_or_null(c->q5);
            p["corrected_q50"] = number_or_null(c->q50);
            p["corrected_q95"] = number_or_null(c->q95);
            p["corrected_mean_abs"] = number_or_null(c->mean_abs);
        }
        params.push_back(std::move(p));
    }
    doc["iterations"] = facts.iterations;
    doc["converged"] = facts.converged;
    doc["seconds"] = optional_or_null(facts.seconds);
    if (facts.log_evidence) doc["log_evidence"] = number_or_null(*facts.log_evidence);
    if (facts.log_evidence_se) doc["log_evidence_se"] = number_or_null(*facts.log_evidence_se);
    if (facts.pareto_k) doc["pareto_k"] = number_or_null(*facts.pareto_k);
    if (facts.correction) doc["correction"] = *facts.correction;
    if (facts.correction_draws) doc["correction_draws"] = *facts.correction_draws;
    if (facts.correction_ess) doc["correction_ess"] = number_or_null(*facts.correction_ess);
    if (facts.correction_rhat) doc["correction_rhat"] = number_or_null(*facts.correction_rhat);
    return doc;
}

void write_json_file(const std::string& path, const nlohmann::ordered_json& doc) {
    std::ofstream out(path);
    if (!out) throw Error(ErrorKind::io, fmt::format("cannot write the JSON file '{}'", path));
    out << doc.dump(2) << '\n';
    out.flush();
    if (!out) throw Error(ErrorKind::io, fmt::format("writing the JSON file '{}' failed", path));
}

namespace {

std::string method_of(const StanCsv& csv) {
    const std::string algorithm = csv.config_value("algorithm").value_or("");
    const std::string engine = csv.config_value("engine").value_or("");
    if (algorithm.empty()) return "unknown";
    return algorithm == "hmc" && !engine.empty() ? fmt::format("hmc ({})", engine) : algorithm;
}

RunFacts facts_from_files(const std::vector<StanCsv>& files) {
    const StanCsv& first = files.front();
    RunFacts f;
    f.model = first.config_value("model").value_or("");
    f.method = method_of(first);
    f.chains = static_cast<int>(files.size());
    f.draws = static_cast<long>(first.draws.rows());
    if (const auto w = first.config_value("num_warmup")) f.warmup = std::atol(w->c_str());
    bool all_timed = true;
    double accept_sum = 0;
    long accept_n = 0;
    for (const auto& csv : files) {
        all_timed = all_timed && csv.warmup_seconds && csv.sampling_seconds;
        if (const auto d = csv.sampler_column("divergent__")) f.divergent += static_cast<long>(d->sum());
        if (const auto a = csv.sampler_column("accept_stat__")) {
            accept_sum += a->sum();
            accept_n += a->size();
        }
    }
    if (all_timed)
        for (const auto& csv : files) f.chain_seconds.push_back({*csv.warmup_seconds, *csv.sampling_seconds});
    if (accept_n > 0) f.mean_accept_stat = accept_sum / static_cast<double>(accept_n);
    return f;
}

}  // namespace

namespace {

// The fewest draws of a chain that has any (0 when none has).
long shortest_kept(const std::vector<long>& draws) {
    long m = 0;
    for (long d : draws) m = d > 0 && (m == 0 || d < m) ? d : m;
    return m;
}

}  // namespace

std::string truncation_note(const std::vector<std::string>& labels, const std::vector<long>& draws) {
    std::vector<std::string> used, empty, counts;
    const long shortest = shortest_kept(draws);
    for (std::size_t c = 0; c < draws.size(); ++c) {
        counts.push_back(fmt::format("{}: {}", labels[c], draws[c]));
        (draws[c] > 0 ? used : empty).push_back(labels[c]);
    }
    if (std::all_of(draws.begin(), draws.end(), [&](long n) { return n == draws.front(); })) return "";
    const auto list = [](const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); };
    std::string note = fmt::format("chains of unequal length (draws per chain: {}): the summary uses {} ", list(counts),
                                   list(used));
    note += used.size() > 1 ? fmt::format("truncated to the shortest, {} draws each", shortest)
                            : fmt::format("alone, {} draws", shortest);
    if (!empty.empty()) note += fmt::format("; {} {} no draws and {} left out", list(empty), empty.size() == 1 ? "has" : "have",
                                            empty.size() == 1 ? "is" : "are");
    return note;
}

ChainFiles read_chain_files(const std::vector<std::string>& files, ParameterRange range) {
    ChainFiles out;
    std::vector<StanCsv> csvs;
    for (const auto& f : files) csvs.push_back(read_stan_csv(f, range));
    if (csvs.empty()) throw Error(ErrorKind::usage, "no CmdStan CSV files given");
    const StanCsv& first = csvs.front();
    std::vector<std::string> labels;
    std::vector<long> draws;
    for (const auto& csv : csvs) {
        if (csv.parameter_columns != first.parameter_columns)
            throw Error(ErrorKind::data, fmt::format("{}: its parameter columns differ from those of {}; all files must "
                                                     "come from the same model",
                                                     csv.path, first.path));
        labels.push_back(csv.path);
        draws.push_back(static_cast<long>(csv.draws.rows()));
    }
    if (first.parameter_columns.empty())
        throw Error(ErrorKind::data, fmt::format("{}: the file has no parameter columns", first.path));
    const long shortest = shortest_kept(draws);
    if (shortest == 0)
        throw Error(ErrorKind::data, csvs.size() == 1 ? fmt::format("{}: the file holds no draws", first.path)
                                                      : fmt::format("none of the {} files holds a draw ({} …): nothing to "
                                                                    "summarise (a run interrupted during warmup leaves them so)",
                                                                    csvs.size(), first.path));
    out.truncation = truncation_note(labels, draws);
    for (StanCsv& csv : csvs) {
        if (csv.draws.rows() == 0) continue;
        csv.draws.conservativeResize(shortest, Eigen::NoChange);
        if (csv.sampler.rows() > shortest) csv.sampler.conservativeResize(shortest, Eigen::NoChange);
        out.chains.push_back(std::move(csv));
    }
    return out;
}

FilesSummary summarize_files(const std::vector<std::string>& files, double memory_budget) {
    if (files.empty())
        throw Error(ErrorKind::usage, "vbn summary needs one or more CmdStan CSV files, one per chain (FILE_1.csv FILE_2.csv ...)");
    // The text of a file is longer than its values as doubles: files within the budget are
    // read whole, larger ones in groups of columns after a first pass for the facts.
    double bytes = 0;
    for (const auto& f : files) {
        std::error_code ec;
        const auto size = std::filesystem::file_size(f, ec);
        bytes += ec ? 0.0 : static_cast<double>(size);
    }
    if (bytes > memory_budget) {
        const ChainFiles meta = read_chain_files(files, ParameterRange{0, 1});
        const StanCsv& first = meta.chains.front();
        const auto columns = first.parameter_columns.size();
        const double per_column = 8.0 * static_cast<double>(meta.chains.size()) * static_cast<double>(first.draws.rows());
        const auto group =
            static_cast<std::size_t>(std::clamp(std::floor(memory_budget / per_column), 1.0, static_cast<double>(columns)));
        FilesSummary s{{}, facts_from_files(meta.chains), meta.truncation};
        for (std::size_t at = 0; at < columns; at += group) {
            const std::size_t count = std::min(group, columns - at);
            std::vector<std::string> names;
            for (std::size_t k = at; k < at + count; ++k) names.push_back(display_name(first.parameter_columns[k]));
            std::vector<Eigen::MatrixXd> chains;
            for (const StanCsv& csv : read_chain_files(files, ParameterRange{at, count}).chains) chains.push_back(csv.draws);
            for (SummaryRow& r : summarize(names, chains)) s.rows.push_back(std::move(r));
        }
        return s;
    }
    const ChainFiles read = read_chain_files(files);
    const StanCsv& first = read.chains.front();
    std::vector<std::string> names;
    for (const auto& c : first.parameter_columns) names.push_back(display_name(c));
    std::vector<Eigen::MatrixXd> chains;
    for (const auto& csv : read.chains) chains.push_back(csv.draws);
    return FilesSummary{summarize(names, chains), facts_from_files(read.chains), read.truncation};
}

}  // namespace vbn
