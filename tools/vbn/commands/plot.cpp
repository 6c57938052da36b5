// `vbn plot FILE_1.csv … --output-dir DIR`: trace, density, pair and rank plots of CmdStan CSV
// files, drawn by gnuplot (tools/vbn/plot.hpp).
#include "runtime/report/summary.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/plot.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <tuple>

namespace vbn::commands {

int plot(const std::vector<std::string>& files, const std::string& dir, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        const ChainFiles read = read_chain_files(files);
        if (!read.truncation.empty()) err << "note: " << read.truncation << '\n';
        const std::vector<StanCsv>& csvs = read.chains;
        const StanCsv& first = csvs.front();
        plot::PlotInput in;
        in.title = first.config_value("model").value_or(std::filesystem::path(first.path).stem().string());
        for (const auto& c : first.parameter_columns) in.names.push_back(display_name(c));
        for (const auto& csv : csvs) in.chains.push_back(csv.draws);
        const auto mean = first.config_value("vb_mean"), sd = first.config_value("vb_sd");
        if (mean && sd) std::tie(in.vb_mean, in.vb_sd) = plot::parse_vb_comments(*mean, *sd, in.names.size());
        const plot::PlotFiles made = plot::write_plots(in, dir);
        out << fmt::format("wrote {} pictures to {}:", made.images.size(), dir);
        for (const auto& i : made.images) out << ' ' << std::filesystem::path(i).filename().string();
        out << '\n';
        if (in.vb_mean.empty()) out << "(no variational fit recorded in the files: the densities show the MCMC histogram only)\n";
        return 0;
    });
}

}  // namespace vbn::commands
