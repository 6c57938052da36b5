#include "runtime/services/loo.hpp"

#include "runtime/error.hpp"
#include "runtime/report/output_csv.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace vbn::services {

namespace {

constexpr const char* kPrefix = "log_lik.";

// One file's log_lik columns, checked to be log_lik.1 … log_lik.N in order.
Eigen::MatrixXd file_log_lik(const std::string& path) {
    const StanCsv csv = read_stan_csv(path);
    std::vector<Eigen::Index> cols;
    for (std::size_t j = 0; j < csv.parameter_columns.size(); ++j) {
        const std::string& name = csv.parameter_columns[j];
        if (name.rfind(kPrefix, 0) != 0) continue;
        const std::string want = fmt::format("{}{}", kPrefix, cols.size() + 1);
        if (name != want)
            throw Error(ErrorKind::data, fmt::format("{}: column {} where {} was expected: the log_lik columns must be "
                                                     "log_lik.1 … log_lik.N in order",
                                                     path, name, want));
        cols.push_back(static_cast<Eigen::Index>(j));
    }
    if (cols.empty())
        throw Error(ErrorKind::data, fmt::format("{}: no log_lik columns (log_lik.1 … log_lik.N); write them with vbn fit "
                                                 "--log-lik --output FILE.csv",
                                                 path));
    if (csv.draws.rows() < 2)
        throw Error(ErrorKind::data, fmt::format("{}: {} draw{} after warmup; PSIS-LOO needs at least 2 per chain", path,
                                                 csv.draws.rows(), csv.draws.rows() == 1 ? "" : "s"));
    Eigen::MatrixXd ll(csv.draws.rows(), static_cast<Eigen::Index>(cols.size()));
    for (Eigen::Index k = 0; k < ll.cols(); ++k) {
        ll.col(k) = csv.draws.col(cols[static_cast<std::size_t>(k)]);
        for (Eigen::Index d = 0; d < ll.rows(); ++d)
            if (!std::isfinite(ll(d, k)))
                throw Error(ErrorKind::data, fmt::format("{}: {}{} is {} in draw {}; a log-likelihood must be finite", path,
                                                         kPrefix, k + 1, ll(d, k), d + 1));
    }
    return ll;
}

}  // namespace

std::vector<Eigen::MatrixXd> read_log_lik(const std::vector<std::string>& files) {
    if (files.empty()) throw Error(ErrorKind::usage, "no CSV files given");
    std::vector<Eigen::MatrixXd> out;
    for (const std::string& f : files) {
        out.push_back(file_log_lik(f));
        const Eigen::MatrixXd& first = out.front();
        const Eigen::MatrixXd& m = out.back();
        if (m.cols() != first.cols())
            throw Error(ErrorKind::data, fmt::format("{} has {} log_lik columns but {} has {}: the files must be the chains of "
                                                     "one fit to the same data",
                                                     f, m.cols(), files.front(), first.cols()));
        if (m.rows() != first.rows())
            throw Error(ErrorKind::data, fmt::format("{} has {} draws but {} has {}: PSIS-LOO needs chains of equal length", f,
                                                     m.rows(), files.front(), first.rows()));
    }
    return out;
}

inference::LooResult loo(const std::vector<std::string>& files) { return inference::psis_loo(read_log_lik(files)); }

}  // namespace vbn::services
