#include "runtime/services/relabel.hpp"

#include "inference/parallel.hpp"
#include "lang/symmetry.hpp"
#include "runtime/error.hpp"
#include "runtime/report/output_csv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace vbn::services {

namespace {

std::string count_text(const lang::Symmetries& s) {
    return s.labelings ? fmt::format("{} labelings", *s.labelings) : std::string("more than 10^18 labelings");
}

bool too_many(const lang::Symmetries& s) { return !s.labelings || *s.labelings > max_relabel_labelings; }

// A CSV field negated, as text: the value read back is exactly the negated double.
std::string negated(const std::string& field) { return field.starts_with('-') ? field.substr(1) : "-" + field; }

// One draw line with its parameter fields (after the sampler columns) relabelled by element e.
std::string relabelled_line(const std::string& line, const LabelingGroup& group, int e) {
    std::vector<std::string> fields;
    for (std::size_t start = 0;;) {
        const std::size_t comma = line.find(',', start);
        fields.push_back(line.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    const std::size_t first = sampler_column_names().size();
    const std::vector<std::string> old(fields);
    const std::vector<int>& g = group.elements[static_cast<std::size_t>(e)];
    for (int k : group.support) {
        const int c = g[static_cast<std::size_t>(k)];
        const std::string& from = old.at(first + static_cast<std::size_t>(std::abs(c) - 1));
        fields.at(first + static_cast<std::size_t>(k)) = c > 0 ? from : negated(from);
    }
    std::string out = fields[0];
    for (std::size_t k = 1; k < fields.size(); ++k) out += "," + fields[k];
    return out;
}

// Rewrites one chain's file: `comment` before the `# vbn_version` line, each draw relabelled.
void rewrite(const std::string& path, const LabelingGroup& group, const std::vector<int>& element,
             const std::string& comment) {
    std::ifstream in(path);
    const std::string tmp = path + ".relabel";
    std::ofstream out(tmp);
    if (!in || !out) throw Error(ErrorKind::io, fmt::format("{}: cannot rewrite the file with relabelled draws", path));
    std::string line;
    bool header_seen = false, noted = false;
    std::size_t draw = 0;
    while (std::getline(in, line)) {
        if (!noted && (line.starts_with("# vbn_version") || !line.starts_with('#'))) {
            out << "# relabel = " << comment << '\n';
            noted = true;
        }
        if (line.starts_with('#') || line.empty()) out << line << '\n';
        else if (!header_seen) header_seen = true, out << line << '\n';
        else {
            // Most draws keep their labeling: their lines are copied as they are.
            const int e = draw < element.size() ? element[draw] : 0;
            out << (e == 0 ? line : relabelled_line(line, group, e)) << '\n';
            ++draw;
        }
    }
    out.close();
    if (!out) throw Error(ErrorKind::io, fmt::format("{}: cannot write the relabelled draws", tmp));
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw Error(ErrorKind::io, fmt::format("{}: cannot replace it with the relabelled draws: {}", path, ec.message()));
}

}  // namespace

void check_relabel_rule(const std::string& rule) {
    if (rule != "pivot" && rule != "none")
        throw Error(ErrorKind::usage, fmt::format("unknown relabel rule '{}'; choose pivot or none", rule));
}

std::optional<LabelingGroup> relabel_group(const ir::Graph& graph, const lang::Symmetries& s,
                                           const std::string& rule, const std::vector<int>& order,
                                           RelabelFacts& facts) {
    if (!s.any()) return std::nullopt;
    facts.rule = "none";
    if (rule == "none") {
        facts.why = "relabel = none";
        return std::nullopt;
    }
    std::optional<LabelingGroup> group = too_many(s) ? std::nullopt : labeling_group(graph, s, order);
    if (!group) {
        facts.why = fmt::format("more than {} labelings to compare each draw with", max_relabel_labelings);
        return std::nullopt;
    }
    facts.rule = "pivot";
    return group;
}

std::string unrelabelled_header(const ir::Graph& graph, const std::string& rule) {
    const lang::Symmetries s = lang::find_symmetries(graph);
    if (!s.any() || (rule != "none" && !too_many(s))) return {};
    return fmt::format("none, {}{}", count_text(s), rule == "none" ? "" : fmt::format(" (more than {})", max_relabel_labelings));
}

RelabelFacts relabel_kept(const ir::Graph& graph, const std::string& rule, FitResult& result) {
    RelabelFacts facts;
    std::vector<int> order(static_cast<std::size_t>(graph.dim));
    std::iota(order.begin(), order.end(), 0);
    const std::optional<LabelingGroup> group = relabel_group(graph, result.symmetries, rule, order, facts);
    if (!group) return facts;
    auto read = [&](std::size_t c) {
        const inference::ChainResult& ch = result.chains[c];
        if (!ch.ok()) return ChainDraws{};
        const Eigen::Index n = std::min<Eigen::Index>(ch.draws.rows(), ch.lp.size());
        return ChainDraws{ch.draws.topRows(n), ch.lp.head(n)};
    };
    const PivotRelabelling r = relabel_to_pivot(*group, result.chains.size(), read);
    for (std::size_t c = 0; c < result.chains.size(); ++c) apply_labeling(*group, r.element[c], result.chains[c].draws);
    facts.relabelled = r.relabelled;
    facts.draws = r.draws;
    return facts;
}

// θ's columns only: the group acts on them (the log-likelihood's are the same under every labeling).
ChainDraws parse_chain_file(const std::string& output, std::size_t c, const FitResult& result) {
    if (c >= result.chains.size() || !result.chains[c].ok()) return {};
    StanCsv f = read_stan_csv(chain_file_path(output, static_cast<int>(c) + 1), ParameterRange{0, result.order.size()});
    Eigen::VectorXd lp = f.sampler_column("lp__").value_or(Eigen::VectorXd::Zero(f.draws.rows()));
    return ChainDraws{std::move(f.draws), std::move(lp)};
}

// One file per thread at a time: each is parsed into its own entry.
std::vector<ChainDraws> parse_chain_files(const std::string& output, std::size_t files, const FitResult& result) {
    std::vector<ChainDraws> parsed(files);
    inference::parallel_ranges(inference::threads_or_cores(result.threads), files, [&](std::size_t begin, std::size_t end, std::size_t) {
        for (std::size_t c = begin; c < end; ++c) parsed[c] = parse_chain_file(output, c, result);
    });
    return parsed;
}

RelabelFacts relabel_csv_files(const ir::Graph& graph, const std::string& rule, const std::string& output,
                               std::size_t files, const FitResult& result, std::vector<ChainDraws>& parsed) {
    RelabelFacts facts;
    const std::optional<LabelingGroup> group = relabel_group(graph, result.symmetries, rule, result.order, facts);
    if (!group) return facts;
    const bool held = parsed.size() == files;
    auto read = [&](std::size_t c) { return held ? parsed[c] : parse_chain_file(output, c, result); };
    const PivotRelabelling r = relabel_to_pivot(*group, files, read);
    const std::string count = count_text(result.symmetries);
    auto relabel_chain = [&](std::size_t c) {
        if (c >= result.chains.size() || !result.chains[c].ok()) return;  // a failed chain's file is left as it is
        const std::vector<int>& el = r.element[c];
        const auto moved = static_cast<long>(el.size()) - std::count(el.begin(), el.end(), 0);
        rewrite(chain_file_path(output, static_cast<int>(c) + 1), *group, el,
                fmt::format("pivot, {}, {} of this chain's {} draws relabelled ({:.0f}%)", count, moved, el.size(),
                            100.0 * static_cast<double>(moved) / static_cast<double>(std::max<std::size_t>(el.size(), 1))));
        if (held) apply_labeling(*group, el, parsed[c].draws);
    };
    // Each file rewritten, and its held draws relabelled, on one thread.
    inference::parallel_ranges(inference::threads_or_cores(result.threads), files, [&](std::size_t begin, std::size_t end, std::size_t) {
        for (std::size_t c = begin; c < end; ++c) relabel_chain(c);
    });
    facts.relabelled = r.relabelled;
    facts.draws = r.draws;
    return facts;
}

}  // namespace vbn::services
