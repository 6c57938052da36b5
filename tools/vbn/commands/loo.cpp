// `vbn loo FILE_1.csv …`: PSIS leave-one-out cross-validation from the log_lik columns of
// one fit's chain files (`vbn fit --log-lik --output FILE.csv`).
#include "runtime/report/loo_table.hpp"
#include "runtime/services/loo.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"

namespace vbn::commands {

int loo(const std::vector<std::string>& files, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        const inference::LooResult r = services::loo(files);
        out << format_loo(r);
        out.flush();
        const std::string warning = loo_khat_warning(r);
        if (!warning.empty()) err << "warning: " << warning << '\n';
        return 0;
    });
}

}  // namespace vbn::commands
