// Running the chains on until their draws are enough (FitOptions::max_draws; docs/methods.md,
// "Draws until the ESS is enough"). After the requested draws, the fit job relabels a copy of
// every chain's draws as the summary will, and where some parameter's R-hat is above 1.01 or
// its bulk- or tail-ESS below 100 per chain (the summary's warnings) it asks the chain runner
// for more draws, continuing each chain where it stopped, up to max_draws per chain.
//
//   Extension ext(graph, settings);                 // disabled unless max_draws > draws
//   callbacks.on_draw = ... ext.record(chain, draw, values, lp) ...;
//   callbacks.extend = [&](const auto& chains) { return ext.more(chains); };
#pragma once

#include "inference/chains.hpp"
#include "lang/ir.hpp"
#include "runtime/report/relabel.hpp"
#include "runtime/sampling/fit.hpp"

#include <Eigen/Core>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace vbn::services {

// The weakest parameters of a set of chains, after relabelling (NaN where none is defined).
struct DrawCheck {
    double min_ess = 0;         // the smallest of every parameter's bulk- and tail-ESS
    std::string min_ess_of;     // "tail-ESS of c[2]"
    double max_rhat = 0;
    std::string max_rhat_of;    // "c[2]"
    long draws = 0;             // per chain
    int chains = 0;             // chains that count (not failed, not stopped)
};

class Extension {
public:
    // Disabled (enabled() false) unless settings.max_draws > settings.draws; also when the
    // copies of the draws it keeps would pass `memory_budget` bytes, with a note saying so.
    // Each decision's note goes to `note` as it is made, and to notes().
    Extension(const ir::Graph& graph, const FitOptions& settings, std::function<void(const std::string&)> note,
              double memory_budget = 1e9);

    bool enabled() const { return enabled_; }
    // A kept draw of `chain`, in output order (output_order(graph)), from its worker thread.
    void record(int chain, int draw, const Eigen::VectorXd& values, double lp);
    // The chain runner's ChainCallbacks::extend: the further draws every chain should make,
    // 0 once the check passes or the chains reached max_draws; each decision adds a note.
    int more(const std::vector<inference::ChainResult>& chains);
    // The check of the draws recorded so far.
    DrawCheck check(const std::vector<inference::ChainResult>& chains) const;

    const std::vector<std::string>& notes() const { return notes_; }
    // Sampling iterations per chain asked for in all: draws plus every extension.
    int draws() const { return draws_; }

private:
    const ir::Graph& graph_;
    std::string relabel_;
    int draws_ = 0, max_draws_ = 0;
    bool enabled_ = false;
    std::vector<Eigen::MatrixXd> values_;  // per chain: max_draws × parameters
    std::vector<Eigen::VectorXd> lp_;
    std::vector<std::string> notes_;
    std::function<void(const std::string&)> note_;
    std::optional<LabelingGroup> group_;  // the summary's relabelling (relabel_group), made once

    void say(std::string note);
};

// The draws per chain to ask for when `check` falls short: enough, at the ESS per draw seen,
// for 1.2 times the ESS wanted (at least 1.25 times the draws so far; twice them when only
// R-hat is short), in whole hundreds, at most max_draws.
int extended_draws(const DrawCheck& check, double ess_wanted, int max_draws);

}  // namespace vbn::services
