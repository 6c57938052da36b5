// `vbn summary FILE_1.csv …`: the summary table of CmdStan CSV files, one per chain.
#include "runtime/report/summary.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"

namespace vbn::commands {

int summary(const std::vector<std::string>& files, std::ostream& out, std::ostream& err, double memory_budget) {
    return guarded(err, [&] {
        const FilesSummary s = summarize_files(files, memory_budget);
        if (!s.truncation.empty()) err << "note: " << s.truncation << '\n';
        out << format_summary(s.rows, s.facts);
        return 0;
    });
}

}  // namespace vbn::commands
