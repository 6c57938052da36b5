// CmdStan CSV writer and reader.
//
// What the common readers expect, checked against their source (cmdstanpy's
// utils/stancsv.py and stanfit/__init__.py + mcmc.py, ArviZ's data/io_cmdstan.py, rstan's
// read_stan_csv / read_csv_header / parse_stancsv_comments / get_time_from_csv), and how
// the files written here satisfy it:
// - cmdstanpy.from_csv reads the leading '#' lines as `key = value` (text after the first
//   '#', spaces and tabs stripped, exactly one '=', "(Default)" removed) and requires
//   `model`, `method` (= sample), `num_samples`, `num_warmup`, `thin`, `save_warmup`; its
//   draw scanner also requires `metric` and `max_depth`. All are always written.
// - The header is the first line not starting with '#'. cmdstanpy then expects, unless
//   warmup draws are saved, the exact line "# Adaptation terminated", then "# Step size = x";
//   for diag_e exactly "# Diagonal elements of inverse mass matrix:" and one line of
//   comma-separated values, for dense_e "# Elements of inverse mass matrix:" and n lines,
//   for unit_e nothing else. No other comment line may come before the draws, because the
//   draw scanner stops at the first '#' line and checks the count against num_samples.
// - cmdstanpy parses divergent__ and treedepth__ with int(), so those (and n_leapfrog__)
//   are written as integers, never "0.0".
// - ArviZ keeps every '#' line as a comment, takes "Step size = x", the line after one
//   containing "inverse mass matrix", and lines with "seconds" and "(Warm-up)", "(Sampling)"
//   or "(Total)" after stripping "Elapsed Time:"; columns ending in "__" are sample stats.
// - rstan finds the header as the first line without '#', reads all non-comment lines with
//   read.csv (so "nan", "inf", "-inf" are fine), takes the config from '=' lines before
//   "Adaptation terminated", and reads the warm-up and sampling times from the line with
//   "Elapsed Time" and the next one by deleting every character but digits and '.', so the
//   times are written in fixed notation (an exponent would corrupt them).
// - Dotted indices (w.1, W.2.3) become w[1], W[2,3] in all three.
// - `vbn fit` adds `# vb_elbo = x`, `# vb_mean = a, b, …` and `# vb_sd = …` before the header
//   (CsvConfig::extra): cmdstanpy keeps the lists as strings (one '=' each), ArviZ's
//   key = value patterns skip them (a single value is kept as a number), rstan keeps them
//   among the configuration text; the R test reads such files.
#include "runtime/report/output_csv.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef VBN_VERSION
#define VBN_VERSION "unknown"
#endif

namespace vbn {
namespace {

const char* metric_name(MetricKind m) {
    switch (m) {
        case MetricKind::unit_e: return "unit_e";
        case MetricKind::diag_e: return "diag_e";
        case MetricKind::dense_e: return "dense_e";
    }
    return "unit_e";
}

// Shortest text that reads back to the same double; non-finite values as C++ streams (and
// so CmdStan) print them.
void append_double(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "nan";
    } else if (std::isinf(v)) {
        out += v > 0 ? "inf" : "-inf";
    } else {
        fmt::format_to(std::back_inserter(out), "{}", v);
    }
}

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string_view> split_commas(std::string_view line) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const auto comma = line.find(',', start);
        out.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

// A number as CmdStan, R and Python write them: decimal or exponent notation, nan, inf.
std::optional<double> parse_double(std::string_view s) {
    std::string t = trim(s);
    std::string_view v = t;
    if (!v.empty() && v.front() == '+') v.remove_prefix(1);
    double out = 0;
    const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) return std::nullopt;
    return out;
}

[[noreturn]] void fail(ErrorKind kind, const std::string& name, long line, const std::string& what) {
    throw Error(kind, fmt::format("{}:{}: {}", name, line, what), line, 0);
}

}  // namespace

SamplerValues sampler_values(double lp, const inference::TransitionInfo& info) {
    return SamplerValues{lp, info.accept_stat, info.stepsize, info.treedepth, info.n_leapfrog, info.divergent, info.energy};
}

std::string chain_file_path(const std::string& output, int chain) {
    const std::string suffix = ".csv";
    if (output.size() >= suffix.size() && output.compare(output.size() - suffix.size(), suffix.size(), suffix) == 0)
        return fmt::format("{}_{}{}", output.substr(0, output.size() - suffix.size()), chain, suffix);
    return fmt::format("{}_{}.csv", output, chain);
}

std::string csv_column_name(const std::string& name) {
    const auto open = name.find('[');
    if (open == std::string::npos || name.back() != ']') return name;
    std::string out = name.substr(0, open) + ".";
    for (std::size_t i = open + 1; i + 1 < name.size(); ++i) {
        if (name[i] == ' ') continue;
        out += name[i] == ',' ? '.' : name[i];
    }
    return out;
}

std::string display_name(const std::string& column) {
    const auto dot = column.find('.');
    if (dot == std::string::npos) return column;
    std::string out = column.substr(0, dot) + "[";
    for (std::size_t i = dot + 1; i < column.size(); ++i) out += column[i] == '.' ? ',' : column[i];
    return out + "]";
}

CsvWriter::CsvWriter(const std::string& path, const CsvConfig& config, const std::vector<std::string>& parameter_names)
    : file_(path, std::ios::out | std::ios::trunc), out_(&file_), path_(path), metric_(config.metric),
      parameters_(parameter_names.size()) {
    if (!file_) throw Error(ErrorKind::io, fmt::format("cannot write the draws file '{}'", path));
    write_header(config, parameter_names);
}

CsvWriter::CsvWriter(std::ostream& out, const CsvConfig& config, const std::vector<std::string>& parameter_names)
    : out_(&out), path_("<stream>"), metric_(config.metric), parameters_(parameter_names.size()) {
    write_header(config, parameter_names);
}

CsvWriter::~CsvWriter() {
    if (out_) out_->flush();
}

void CsvWriter::check_stream(const char* what) {
    if (!*out_) throw Error(ErrorKind::io, fmt::format("writing {} to '{}' failed (disk full?)", what, path_));
}

void CsvWriter::write_header(const CsvConfig& c, const std::vector<std::string>& parameter_names) {
    std::ostream& o = *out_;
    // The nesting mirrors CmdStan's argument tree; readers only look at the key = value pairs.
    o << "# model = " << c.model << '\n'
      << "# method = sample\n"
      << "#   sample\n"
      << "#     num_samples = " << c.num_samples << '\n'
      << "#     num_warmup = " << c.num_warmup << '\n'
      << "#     save_warmup = " << (c.save_warmup ? 1 : 0) << '\n'
      << "#     thin = " << c.thin << '\n'
      << "#     algorithm = " << c.algorithm << '\n';
    if (!c.engine.empty()) o << "#       engine = " << c.engine << '\n';
    o << "#         max_depth = " << c.max_depth << '\n'
      << "#       metric = " << metric_name(c.metric) << '\n'
      << "# id = " << c.chain_id << '\n';
    if (!c.data_file.empty()) o << "# data\n#   file = " << c.data_file << '\n';
    o << "# random\n#   seed = " << c.seed << '\n';
    for (const auto& [key, value] : c.extra) o << "# " << key << " = " << value << '\n';
    o << "# vbn_version = " << VBN_VERSION << '\n';

    std::string header;
    for (const auto& s : sampler_column_names()) header += header.empty() ? s : "," + s;
    for (const auto& p : parameter_names) header += "," + csv_column_name(p);
    o << header << '\n';
    check_stream("the header");
}

void CsvWriter::adaptation_terminated(double step_size, const Eigen::MatrixXd& inverse_metric) {
    std::ostream& o = *out_;
    std::string line = "# Adaptation terminated\n# Step size = ";
    append_double(line, step_size);
    line += '\n';
    const auto row = [&](auto&& values) {
        line += "# ";
        for (Eigen::Index k = 0; k < values.size(); ++k) {
            if (k > 0) line += ", ";
            append_double(line, values(k));
        }
        line += '\n';
    };
    switch (metric_) {
        case MetricKind::unit_e:
            if (inverse_metric.size() != 0)
                throw std::logic_error("a unit_e metric has no inverse metric to write");
            break;
        case MetricKind::diag_e:
            if (inverse_metric.cols() != 1 && inverse_metric.rows() != 1)
                throw std::logic_error("a diag_e inverse metric is a vector");
            line += "# Diagonal elements of inverse mass matrix:\n";
            row(inverse_metric.reshaped());
            break;
        case MetricKind::dense_e:
            if (inverse_metric.rows() != inverse_metric.cols() || inverse_metric.size() == 0)
                throw std::logic_error("a dense_e inverse metric is a square matrix");
            line += "# Elements of inverse mass matrix:\n";
            for (Eigen::Index i = 0; i < inverse_metric.rows(); ++i) row(inverse_metric.row(i));
            break;
    }
    o << line;
    o.flush();
    check_stream("the adaptation block");
}

void CsvWriter::write_draw(const SamplerValues& s, const Eigen::Ref<const Eigen::VectorXd>& x) {
    if (finished_) throw std::logic_error("CsvWriter: draw written after finish()");
    if (static_cast<std::size_t>(x.size()) != parameters_)
        throw std::logic_error(fmt::format("CsvWriter: a draw has {} values, the header {} parameters", x.size(), parameters_));
    line_.clear();
    append_double(line_, s.lp);
    line_ += ',';
    append_double(line_, s.accept_stat);
    line_ += ',';
    append_double(line_, s.stepsize);
    fmt::format_to(std::back_inserter(line_), ",{},{},{},", s.treedepth, s.n_leapfrog, s.divergent ? 1 : 0);
    append_double(line_, s.energy);
    for (Eigen::Index k = 0; k < x.size(); ++k) {
        line_ += ',';
        append_double(line_, x(k));
    }
    line_ += '\n';
    out_->write(line_.data(), static_cast<std::streamsize>(line_.size()));
    ++draws_;
    check_stream("a draw");
}

void CsvWriter::finish(double warmup_seconds, double sampling_seconds) {
    if (finished_) return;
    finished_ = true;
    // CmdStan's timing block: the title " Elapsed Time: " and its width in spaces below it.
    *out_ << fmt::format(
        "# \n#  Elapsed Time: {:.3f} seconds (Warm-up)\n#                {:.3f} seconds (Sampling)\n"
        "#                {:.3f} seconds (Total)\n# \n",
        warmup_seconds, sampling_seconds, warmup_seconds + sampling_seconds);
    out_->flush();
    check_stream("the timing block");
}

void set_num_samples(const std::string& path, long n) {
    std::ifstream in(path);
    const std::string tmp = path + ".num_samples";
    std::ofstream out(tmp);
    if (!in || !out) throw Error(ErrorKind::io, fmt::format("{}: cannot rewrite its num_samples line", path));
    constexpr std::string_view key = "#     num_samples = ";  // as write_header writes it
    bool done = false;
    std::string line;
    while (std::getline(in, line)) {
        if (!done && line.starts_with(key)) {
            line = fmt::format("{}{}", key, n);
            done = true;
        }
        out << line << '\n';
    }
    out.close();
    if (!out) throw Error(ErrorKind::io, fmt::format("{}: cannot write its new num_samples line", tmp));
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw Error(ErrorKind::io, fmt::format("{}: cannot replace it with the new num_samples: {}", path, ec.message()));
}

std::optional<std::string> StanCsv::config_value(const std::string& key) const {
    for (const auto& [k, v] : config)
        if (k == key) return v;
    return std::nullopt;
}

int StanCsv::column_index(const std::string& name) const {
    const auto it = std::find(columns.begin(), columns.end(), name);
    return it == columns.end() ? -1 : static_cast<int>(it - columns.begin());
}

std::optional<Eigen::VectorXd> StanCsv::sampler_column(const std::string& name) const {
    const auto it = std::find(sampler_columns.begin(), sampler_columns.end(), name);
    if (it == sampler_columns.end()) return std::nullopt;
    return Eigen::VectorXd(sampler.col(it - sampler_columns.begin()));
}

StanCsv read_stan_csv(const std::string& path) { return read_stan_csv(path, ParameterRange{}); }

StanCsv read_stan_csv(std::istream& in, const std::string& name) { return read_stan_csv(in, name, ParameterRange{}); }

StanCsv read_stan_csv(const std::string& path, ParameterRange range) {
    std::ifstream in(path);
    if (!in) {
        const bool exists = std::filesystem::exists(path);
        throw Error(ErrorKind::io, exists ? fmt::format("cannot read '{}'", path)
                                          : fmt::format("no such file '{}'", path));
    }
    return read_stan_csv(in, path, range);
}

namespace {

// Reading state for the comment lines that follow the header.
struct CommentState {
    bool adaptation_seen = false;
    int metric_rows_left = 0;  // inverse-metric lines still to read
    bool dense = false;
    std::vector<std::vector<double>> metric_rows;
};

void read_trailing_comment(const std::string& body, StanCsv& csv, CommentState& st, const std::string& name, long lineno) {
    if (st.metric_rows_left > 0) {
        std::vector<double> row;
        for (auto field : split_commas(body)) {
            const auto v = parse_double(field);
            if (!v) fail(ErrorKind::data, name, lineno, fmt::format("'{}' in the inverse metric is not a number", trim(field)));
            row.push_back(*v);
        }
        if (st.dense && st.metric_rows.empty()) st.metric_rows_left = static_cast<int>(row.size());
        st.metric_rows.push_back(std::move(row));
        --st.metric_rows_left;
        return;
    }
    if (body == "Adaptation terminated") {
        st.adaptation_seen = true;
        return;
    }
    if (body.rfind("Step size", 0) == 0) {
        const auto eq = body.find('=');
        const auto v = eq == std::string::npos ? std::nullopt : parse_double(std::string_view(body).substr(eq + 1));
        if (!v) fail(ErrorKind::data, name, lineno, "expected '# Step size = <number>'");
        csv.step_size = *v;
        return;
    }
    if (body == "Diagonal elements of inverse mass matrix:") {
        st.metric_rows_left = 1;
        return;
    }
    if (body == "Elements of inverse mass matrix:") {
        st.metric_rows_left = 1;  // the first row tells the dimension
        st.dense = true;
        return;
    }
    // Timing lines: "Elapsed Time: X seconds (Warm-up)", "X seconds (Sampling)".
    const auto seconds = body.find(" seconds (");
    if (seconds != std::string::npos) {
        std::string number = body.substr(0, seconds);
        const auto colon = number.rfind(':');
        if (colon != std::string::npos) number = number.substr(colon + 1);
        const auto v = parse_double(number);
        if (!v) return;
        if (body.find("(Warm-up)") != std::string::npos) csv.warmup_seconds = *v;
        if (body.find("(Sampling)") != std::string::npos) csv.sampling_seconds = *v;
    }
}

long config_long(const StanCsv& csv, const std::string& key, long fallback, const std::string& name) {
    const auto text = csv.config_value(key);
    if (!text) return fallback;
    const auto v = parse_double(*text);
    if (!v || *v < 0 || *v != std::floor(*v))
        throw Error(ErrorKind::data, fmt::format("{}: the setting '{} = {}' is not a whole number", name, key, *text));
    return static_cast<long>(*v);
}

}  // namespace

StanCsv read_stan_csv(std::istream& in, const std::string& name, ParameterRange range) {
    StanCsv csv;
    csv.path = name;
    std::string raw;
    long lineno = 0;
    bool have_header = false;
    CommentState st;
    std::vector<double> values;  // all rows, row-major
    Eigen::Index rows_before_adaptation = 0;
    std::size_t ncol = 0;
    std::vector<std::size_t> kept_columns;  // the columns whose values are kept, in order

    while (std::getline(in, raw)) {
        ++lineno;
        if (!raw.empty() && raw.back() == '\r') raw.pop_back();
        const std::string line = trim(raw);
        if (line.empty()) continue;
        if (line[0] == '#') {
            const auto text = line.find_first_not_of('#');
            const std::string body = text == std::string::npos ? std::string() : trim(std::string_view(line).substr(text));
            if (!have_header) {
                const auto eq = body.find('=');
                if (eq == std::string::npos) continue;  // section names such as "sample", "adapt"
                std::string value = trim(std::string_view(body).substr(eq + 1));
                const std::string dflt = "(Default)";
                if (value.size() >= dflt.size() && value.compare(value.size() - dflt.size(), dflt.size(), dflt) == 0)
                    value = trim(std::string_view(value).substr(0, value.size() - dflt.size()));
                csv.config.emplace_back(trim(std::string_view(body).substr(0, eq)), value);
            } else {
                read_trailing_comment(body, csv, st, name, lineno);
            }
            continue;
        }
        if (!have_header) {
            for (auto f : split_commas(line)) {
                std::string col = trim(f);
                if (col.size() >= 2 && col.front() == '"' && col.back() == '"') col = col.substr(1, col.size() - 2);
                if (col.empty()) fail(ErrorKind::data, name, lineno, "the header has an empty column name");
                csv.columns.push_back(col);
            }
            ncol = csv.columns.size();
            std::size_t parameter = 0;
            for (std::size_t k = 0; k < ncol; ++k) {
                const std::string& c = csv.columns[k];
                if (c.size() > 2 && c.compare(c.size() - 2, 2, "__") == 0) {
                    kept_columns.push_back(k);
                } else {
                    if (parameter >= range.first && parameter - range.first < range.count) kept_columns.push_back(k);
                    ++parameter;
                }
            }
            have_header = true;
            // The rows the configuration announces, so the values are held once, not in a
            // vector that doubles as it grows (a file cut short or longer only costs a regrowth).
            // Only a hint: a setting that is not a number is reported, if at all, where it is used.
            const auto setting = [&](const char* key) {
                const auto text = csv.config_value(key);
                const auto v = text ? parse_double(*text) : std::nullopt;
                return v && *v >= 0 && *v < 1e9 ? *v : 0.0;
            };
            const std::string save = csv.config_value("save_warmup").value_or("0");
            const double rows = (setting("num_samples") + (save == "1" || save == "true" ? setting("num_warmup") : 0.0)) /
                                    std::max(1.0, setting("thin")) + 1;
            if (rows * static_cast<double>(kept_columns.size()) < 1e8)  // at most 800 MB reserved on a file's word
                values.reserve(static_cast<std::size_t>(rows) * kept_columns.size());
            continue;
        }
        const auto fields = split_commas(line);
        if (fields.size() != ncol)
            fail(ErrorKind::data, name, lineno,
                 fmt::format("a draw has {} values but the header has {} columns (a truncated file?)", fields.size(), ncol));
        if (!st.adaptation_seen) ++rows_before_adaptation;
        for (const std::size_t k : kept_columns) {
            const auto v = parse_double(fields[k]);
            if (!v)
                throw Error(ErrorKind::data,
                            fmt::format("{}:{}: column {} ({}): '{}' is not a number", name, lineno, k + 1,
                                        csv.columns[k], trim(fields[k])),
                            lineno, static_cast<long>(k + 1));
            values.push_back(*v);
        }
    }
    if (!have_header) fail(ErrorKind::data, name, lineno, "no header line: this is not a Stan CSV file");
    if (st.metric_rows_left > 0) fail(ErrorKind::data, name, lineno, "the inverse metric is cut short");

    using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const std::size_t nkept = kept_columns.size();
    const auto rows = static_cast<Eigen::Index>(values.size() / std::max<std::size_t>(nkept, 1));
    const Eigen::Map<const RowMajor> all(values.data(), rows, static_cast<Eigen::Index>(nkept));

    // Saved warmup draws come before "# Adaptation terminated" (or, without that line, are
    // the first ceil(num_warmup / thin) rows).
    Eigen::Index warmup = 0;
    const std::string save = csv.config_value("save_warmup").value_or("0");
    if (save == "1" || save == "true") {
        if (st.adaptation_seen) {
            warmup = rows_before_adaptation;
        } else {
            const long nw = config_long(csv, "num_warmup", 0, name);
            const long thin = std::max(1L, config_long(csv, "thin", 1, name));
            warmup = std::min<Eigen::Index>(rows, (nw + thin - 1) / thin);
        }
    }
    csv.warmup_draws = all.topRows(warmup);
    const auto kept = all.bottomRows(rows - warmup);

    std::vector<Eigen::Index> param_idx, sampler_idx;
    for (std::size_t k = 0, at = 0; k < ncol; ++k) {
        const std::string& c = csv.columns[k];
        const bool sampler = c.size() > 2 && c.compare(c.size() - 2, 2, "__") == 0;
        (sampler ? csv.sampler_columns : csv.parameter_columns).push_back(c);
        if (at < nkept && kept_columns[at] == k) (sampler ? sampler_idx : param_idx).push_back(static_cast<Eigen::Index>(at++));
    }
    csv.draws = kept(Eigen::all, param_idx);
    csv.sampler = kept(Eigen::all, sampler_idx);

    if (!st.metric_rows.empty()) {
        const auto r = static_cast<Eigen::Index>(st.metric_rows.size());
        const auto c = static_cast<Eigen::Index>(st.metric_rows.front().size());
        csv.inverse_metric.resize(r, c);
        for (Eigen::Index i = 0; i < r; ++i) {
            if (static_cast<Eigen::Index>(st.metric_rows[static_cast<std::size_t>(i)].size()) != c)
                fail(ErrorKind::data, name, lineno, "the rows of the inverse metric differ in length");
            for (Eigen::Index j = 0; j < c; ++j) csv.inverse_metric(i, j) = st.metric_rows[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
        }
    }
    return csv;
}

}  // namespace vbn
