// `vbn vb MODEL --data CSV`: variational EM, its importance correction, the table.
#include "runtime/error.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/services/variational.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"
#include "tools/vbn/sharded.hpp"
#include "tools/vbn/system.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace vbn::commands {

namespace {

std::vector<VbParameter> parameters(const ir::Graph& g, const VbFit& q, const std::optional<RefinedPosterior>& c) {
    std::vector<VbParameter> params;
    for (int k : output_order(g)) {  // the order `vbn fit` reports in, as CmdStan writes the columns
        VbParameter p;
        p.name = g.theta_name(k);
        p.mean = q.mean[k];
        p.sd = std::sqrt(q.variance(k));
        if (c)
            p.corrected = CorrectedMarginal{c->mean[k], std::sqrt(c->cov(k, k)), c->mcse[k], c->q5[k], c->q50[k], c->q95[k],
                                            c->mean_abs[k]};
        if (g.is_scale(k)) {  // θ holds log τ; users read τ
            const auto j = static_cast<std::size_t>(k - (g.dim - static_cast<int>(g.scales.size())));
            p.mean = q.scale_mean.at(j);
            p.sd = q.scale_sd.at(j);
            // The fit's Gaussian over log τ, its quantiles mapped back to τ.
            const double z95 = boost::math::quantile(boost::math::normal(), 0.95), sd_log = std::sqrt(q.variance(k));
            p.quantiles = std::array<double, 3>{std::exp(q.mean[k] - z95 * sd_log), std::exp(q.mean[k]),
                                                std::exp(q.mean[k] + z95 * sd_log)};
            if (c)
                p.corrected = CorrectedMarginal{c->scale_mean[static_cast<Eigen::Index>(j)], c->scale_sd[static_cast<Eigen::Index>(j)],
                                                c->scale_mcse[static_cast<Eigen::Index>(j)], std::exp(c->q5[k]),
                                                std::exp(c->q50[k]), std::exp(c->q95[k]),
                                                c->scale_mean[static_cast<Eigen::Index>(j)]};
        }
        params.push_back(std::move(p));
    }
    return params;
}

void print_table(const std::vector<VbParameter>& params, const std::optional<RefinedPosterior>& c, const RefineOptions& ro,
                 std::ostream& out) {
    std::size_t width = 4;
    for (const auto& p : params) width = std::max(width, p.name.size());
    if (c) {
        out << fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "name", width, "mean", "sd", "mcse",
                           "5%", "50%", "95%", "vb_mean", "vb_sd");
        for (const auto& p : params)
            out << fmt::format("{:<{}} {:>10.4g} {:>10.4g} {:>10.2g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n", p.name,
                               width, p.corrected->mean, p.corrected->sd, p.corrected->mcse_mean, p.corrected->q5,
                               p.corrected->q50, p.corrected->q95, p.mean, p.sd);
        out << '\n' << describe(*c, ro) << '\n';
        // Sampled, the moments are the chains'; the evidence is still what was tried before.
        const std::string flag = c->evidence_reliable() ? "" : ": NOT reliable, as the correction above says";
        out << fmt::format("log p(data) ~ {:.4f} +- {:.4f} ({}{}); {:.3f} s\n", c->log_evidence, c->log_evidence_se,
                           c->tempered ? "tempering" : "importance sampling", c->sampled ? flag : "", c->seconds);
        return;
    }
    out << fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "name", width, "mean", "sd", "5%", "50%", "95%");
    for (const auto& p : params) {
        const std::array<double, 3> q = p.marginal_quantiles();
        out << fmt::format("{:<{}} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n", p.name, width, p.mean, p.sd, q[0],
                           q[1], q[2]);
    }
    out << '\n';
}

void print_fit(const services::VariationalRun& run, std::ostream& out) {
    const VbFit& q = run.result.best_fit();
    out << fmt::format("variational EM (Jaakkola-Jordan bound, mean-field q over unobserved values){}\n",
                       run.corrected ? ": vb_mean, vb_sd" : "");
    out << fmt::format("ELBO {:.6f} (a lower bound on log p(data)); {} iterations, {}; {:.3f} s\n", q.elbo, q.iterations,
                       q.converged ? "converged" : "NOT converged (iteration cap reached)", run.result.seconds);
    if (run.result.fits.size() <= 1) return;
    out << "restarts (ELBO):";
    for (std::size_t i = 0; i < run.result.fits.size(); ++i)
        out << fmt::format(" {}{:.6f}", static_cast<int>(i) == run.result.best ? "*" : "", run.result.fits[i].elbo);
    out << "   (* used)\n";
}

VbFacts facts(const services::VariationalRun& run) {
    const VbFit& q = run.result.best_fit();
    VbFacts f;
    f.elbo = q.elbo;
    f.iterations = q.iterations;
    f.converged = q.converged;
    f.seconds = run.result.seconds;
    if (const auto& c = run.corrected) {
        f.log_evidence = c->log_evidence;
        f.log_evidence_se = c->log_evidence_se;
        f.pareto_k = c->pareto_k;
        f.correction = c->sampled ? "sampling" : c->tempered ? "tempering" : "importance";
        f.correction_draws = c->sampled    ? c->sampled_draws
                             : c->tempered ? static_cast<long>(c->runs) * c->particles
                                           : c->draws;
        f.correction_ess = c->ess;
        if (c->sampled) f.correction_rhat = c->sampled_rhat;
        else if (c->tempered) f.correction_rhat = c->runs_rhat;
        f.seconds = run.result.seconds + c->seconds;
    }
    return f;
}

// The job on loaded data, with args.settings as `s` (and, over shards, their remote parts).
int run_vb(const VbArgs& args, Loaded& l, services::VariationalSettings s, std::ostream& out, std::ostream& err) {
    s.correct = args.correction != "none";
    using Temper = RefineOptions::Temper;
    s.correction.temper = args.correction == "importance"  ? Temper::never
                          : args.correction == "tempering" ? Temper::always
                                                           : Temper::when_needed;
    // One start without the correction draws no random number: no seed to announce.
    const int restarts = restarts_for(l.graph, s.vb.restarts);
    const bool random = s.correct || restarts > 1;
    s.vb.seed = random ? seed_or_fresh(args.seed, err) : args.seed.value_or(1);
    s.correction.seed = s.vb.seed;
    // Ctrl-C stops EM between iterations: once a restart has finished, the best so far is
    // printed and the status is 130; before that there is nothing to print.
    services::Callbacks cb = console_callbacks(err);
    cb.interrupt = InterruptScope::flag();
    const services::VariationalRun run = [&] {
        const InterruptScope scope;
        try {
            return services::variational(l.graph, std::move(l.data), s, cb);  // held once, by the target
        } catch (const Error& e) {
            if (e.kind() != ErrorKind::cancelled) throw;
            throw Error(ErrorKind::cancelled, fmt::format("interrupted before the first of {} restart{} finished: no fit "
                                                          "to report",
                                                          restarts, restarts == 1 ? "" : "s"));
        }
    }();
    const std::vector<VbParameter> params = parameters(l.graph, run.result.best_fit(), run.corrected);
    print_table(params, run.corrected, s.correction, out);
    print_fit(run, out);
    if (run.corrected && run.corrected->sampled && !run.corrected->reliable())
        err << fmt::format("warning: the sampled correction's R-hat is {:.3f} (above 1.01): the corrected means and sds "
                           "are not reliable; run vbn fit with more --draws\n",
                           run.corrected->sampled_rhat);
    else if (run.corrected && run.corrected->tempered && !run.corrected->reliable())
        err << fmt::format("warning: the tempered correction's runs disagree (R-hat {:.3f}): the corrected means and sds "
                           "are not reliable; run vbn fit\n",
                           run.corrected->runs_rhat);
    else if (run.corrected && !run.corrected->reliable())
        err << fmt::format("warning: importance-correction k-hat {:.2f} > 0.7: the corrected means and sds are not "
                           "reliable; compare with vb_mean and vb_sd or run vbn fit\n",
                           run.corrected->pareto_k);
    if (args.summary_json) write_json_file(*args.summary_json, vb_summary_json(params, facts(run)));
    if (!run.result.interrupted) return 0;
    err << fmt::format("warning: interrupted after {} of {} restarts; the fit above is the best of those{}\n",
                       run.result.fits.size(), restarts, s.correct ? " (no importance correction)" : "");
    return exit_status(static_cast<int>(ErrorKind::cancelled));
}

}  // namespace

int vb(const VbArgs& args, std::ostream& out, std::ostream& err) {
    if (args.shards) {
        // The correction's threads evaluate their batches of draws side by side, as many as rank
        // 0's cores over the ranks (channels 0), each on a channel with one thread per rank.
        const services::ShardSettings ss{*args.shards, 12, 1, 0};
        return run_sharded(args.model, args.data, ss, out, err, {},
                           [&](Loaded& l, services::ShardedData& sd, std::ostream& o, std::ostream& e, double) {
                               services::VariationalSettings s = args.settings;
                               s.sharded = sd.remote;
                               s.sharded_variational = services::variational_over(sd, l.graph);
                               return run_vb(args, l, std::move(s), o, e);
                           });
    }
    return guarded(err, [&] {
        Loaded l = load_printing(args.model, args.data, err);
        return run_vb(args, l, args.settings, out, err);
    });
}

}  // namespace vbn::commands
