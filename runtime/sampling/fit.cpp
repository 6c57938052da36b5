#include "runtime/sampling/fit.hpp"

#include "inference/clock.hpp"
#include "inference/gaussian.hpp"
#include "inference/kernel_combinators.hpp"
#include "inference/parallel.hpp"
#include "inference/symmetry_jump.hpp"
#include "lang/approximate_symmetry.hpp"
#include "lang/symmetry.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/gibbs.hpp"
#include "runtime/sampling/kernels.hpp"
#include "runtime/sampling/pmc.hpp"
#include "runtime/sampling/scale_kernel.hpp"
#include "runtime/sampling/symmetry_moves.hpp"
#include "runtime/target/target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <optional>
#include <utility>

namespace vbn {

double nuts_adapt_delta(const ir::Graph& graph, const Dataset& data, double requested) {
    if (requested != 0) {
        if (!(requested > 0 && requested < 1))
            throw Error(ErrorKind::usage, fmt::format("--adapt-delta must lie strictly between 0 and 1, got {}", requested));
        return requested;
    }
    return graph.dim > nuts_low_delta_above && !has_unobserved_values(graph, data) ? 0.65 : 0.8;
}

std::vector<int> output_order(const ir::Graph& graph) {
    std::vector<int> order;
    for (const auto& p : graph.parameters) {
        if (p.shape.size() == 2) {
            const int rows = p.shape[0], cols = p.shape[1];
            for (int c = 0; c < cols; ++c)
                for (int r = 0; r < rows; ++r) order.push_back(p.theta_index[static_cast<std::size_t>(r * cols + c)]);
        } else {
            order.insert(order.end(), p.theta_index.begin(), p.theta_index.end());
        }
    }
    return order;
}

namespace {
using Clock = std::chrono::steady_clock;

// The independence kernels propose from the exact posterior (FitOptions::proposal).
bool uses_exact_proposal(const MethodInfo& method, const FitOptions& o) {
    return o.proposal == "laplace" && method.independence_proposal;
}

LaplaceProposalOptions laplace_options(const FitOptions& o) {
    LaplaceProposalOptions lo = o.laplace;
    lo.seed = o.seed;
    lo.threads = o.threads;
    return lo;
}

// The exact posterior's proposal for the independence kernels: `early` where it was built
// beside the variational fit, else by Newton from the VB mean; with a note saying which
// proposal they use.
std::optional<LaplaceProposal> exact_proposal(const MethodInfo& method, const Target& target, const VbFit& q,
                                              const FitOptions& o, std::optional<LaplaceProposal> early,
                                              std::vector<std::string>& notes) {
    if (!uses_exact_proposal(method, o)) return std::nullopt;
    LaplaceProposalOptions lo = laplace_options(o);
    // varmh proposes θ whole, so blocks that summed-out values couple need not be apart.
    lo.whole = method.id == Method::varmh;
    std::string why_not;
    std::optional<LaplaceProposal> p = early ? std::move(early) : laplace_proposal(target, q, lo, &why_not);
    notes.push_back(p ? p->describe(lo) : fmt::format("independence proposal: the variational fit ({})", why_not));
    // varblock's split blocks are not proposed whole, so their pilot k̂ says nothing about them.
    double k = 0;
    if (p) {
        for (std::size_t b = 0; b < p->blocks.size(); ++b)
            if (!method.splits_blocks || !o.varblock_split.splits(p->blocks[b])) k = std::max(k, p->pareto_k[b]);
    }
    if (p && !(k <= 0.7))
        notes.push_back(fmt::format("the independence proposal fits the posterior poorly (pilot k-hat {:.2f} > 0.7): "
                                    "expect sticky chains; --method nuts or rwm may mix better",
                                    k));
    return p;
}

// What the stages of fit() hand on to each other.
struct RunState {
    RunState(const ir::Graph& g, const Dataset& d, const FitOptions& options, Dataset* handed)
        : graph(g), data(d), o(options), handed(handed) {}
    const ir::Graph& graph;
    const Dataset& data;    // read only for its columns and missing counts once the target is built
    const FitOptions& o;
    Dataset* handed;                        // `data`, where the caller handed it over: dropped after use
    const MethodInfo* method = nullptr;     // never `auto`
    bool by_auto = false;                   // chosen by `auto` (which may fall back to gibbs)
    bool unobserved = false;                // has_unobserved_values(graph, data), found in stage 3
    FitResult r;
    std::unique_ptr<Target> target;
    std::optional<LaplaceProposal> early;   // the exact proposal, where built beside the variational fit
    std::vector<PosteriorMode> modes;       // the exact posterior's, where the method searches them
    std::optional<LaplaceProposal> exact;   // the exact posterior's proposal (independence kernels)
    std::vector<char> tails;                // varblock: varblock_tail_flags of exact
    Clock::time_point proposal_start;       // when both the target and the variational fit were done
};

// Stage 1: the options, before any work. Throws Error(usage).
void validate_options(const ir::Graph& graph, const Dataset& data, const FitOptions& o) {
    if (o.chains < 1) throw Error(ErrorKind::usage, "--chains must be at least 1");
    if (o.warmup < 0) throw Error(ErrorKind::usage, "--warmup must not be negative");
    if (o.draws < 1) throw Error(ErrorKind::usage, "--draws must be at least 1");
    if (o.threads < 1) throw Error(ErrorKind::usage, "--threads must be at least 1");
    nuts_adapt_delta(graph, data, o.adapt_delta);  // throws on a value outside (0, 1)
    if (!(o.varblock_overrelax > -1 && o.varblock_overrelax < 1))
        throw Error(ErrorKind::usage, fmt::format("--overrelax must lie strictly between -1 and 1, got {}", o.varblock_overrelax));
    if (o.proposal != "laplace" && o.proposal != "vb")
        throw Error(ErrorKind::usage, fmt::format("unknown proposal '{}'; choose laplace or vb", o.proposal));
    find_method(o.method);  // throws "unknown method"
    if (o.sharded && find_method(o.method).id != Method::nuts && find_method(o.method).id != Method::auto_choice)
        throw Error(ErrorKind::usage, fmt::format("with the rows sharded (--shards) only NUTS evaluates the log density "
                                                  "over the shards so far; use --method nuts (auto chooses it), not {}",
                                                  o.method));
    if (o.sharded && o.log_lik)
        throw Error(ErrorKind::usage, "--log-lik needs every row's log-likelihood on one process; leave out --shards");
    if (o.sharded && !o.sharded_variational)
        throw Error(ErrorKind::usage, "sharded rows need both the remote likelihood and the variational fit over the shards");
    if (graph.dim == 0) throw Error(ErrorKind::usage, "the model has no parameters to sample");
}

// Stage 2: the method, `auto` resolved by choose_method (with a note saying why), and the
// methods' own limits.
void resolve_method(RunState& run) {
    const ir::Graph& graph = run.graph;
    const MethodInfo& asked = find_method(run.o.method);
    run.by_auto = asked.id == Method::auto_choice;
    std::string why;
    if (run.by_auto && run.o.sharded)
        why = "the rows are sharded (--shards), and NUTS is the method that evaluates the log density over the shards";
    run.method = !run.by_auto ? &asked
                 : run.o.sharded ? &method_info(Method::nuts)
                                 : &find_method(choose_method(graph, run.data, &why));
    run.r.method = run.method->name;
    run.r.threads = run.o.threads;
    run.r.hidden = graph.has_hidden();
    run.r.symmetries = lang::find_symmetries(graph);
    run.r.symmetry = lang::describe_symmetries(graph, run.r.symmetries);
    run.r.labelings = run.r.symmetries.labelings;
    if (run.by_auto) run.r.notes.push_back(fmt::format("method auto chose {}: {}", run.r.method, why));
    if (!graph.scales.empty() && run.method->scales == ScaleMoves::refused)
        throw Error(ErrorKind::usage, fmt::format("--method {} does not move learned prior scales (such as '{}'); use auto "
                                                  "(varblock or gibbs, each with a slice step for the scales), nuts or rwm",
                                                  run.r.method, graph.scales.front().name));
    // varmh moves them, but from one t over the weights and each log τ, which misses the funnel
    // at small τ: simulation-based calibration rejects τ on both learned-scale models
    // (bench/results/sbc_varmh_scales.txt; docs/methods.md, "varmh").
    if (!graph.scales.empty() && run.method->id == Method::varmh)
        run.r.notes.push_back(fmt::format("varmh proposes the learned scales (such as '{}') with the weights from one t, "
                                          "which misses the funnel at small scales (simulation-based calibration rejects "
                                          "them); auto moves each scale by slice sampling instead",
                                          graph.scales.front().name));
    if (run.method->dense_only && graph.dim > max_dense_dim)
        throw Error(ErrorKind::limit, fmt::format("--method {2} adapts dense {0} x {0} covariances, too large for {0} "
                                                  "parameters (at most {1}); use --method varblock, varmix or nuts",
                                                  graph.dim, max_dense_dim, run.r.method));
}

// The compiled target: hidden values summed out, or for a method that samples them nothing
// summed out. Where there are too many to sum out, `auto` falls back to gibbs. With
// drop_data, data handed over are dropped as soon as the target has read them.
void compile_target(RunState& run, bool drop_data) {
    std::function<void()> data_read;
    if (drop_data && run.handed) data_read = [&run] { run.handed->drop_values(); };
    if (!run.method->samples_unobserved) {
        try {
            run.target = make_target(run.graph, run.data, run.o.max_enumerated, data_read);
        } catch (const Error& e) {
            if (!run.by_auto || e.kind() != ErrorKind::limit || run.o.sharded) throw;
            run.method = &method_info(Method::gibbs);
            run.r.method = run.method->name;
            run.r.notes.back() = fmt::format("method auto chose {}: {}", run.r.method,
                                             fmt::format(fmt::runtime(run.method->when),
                                                         fmt::arg("max_enumerated", run.o.max_enumerated)));
        }
    }
    if (run.method->samples_unobserved) run.target = make_complete_data_target(run.graph, run.data, data_read);
    if (run.o.sharded) run.target->set_remote(run.o.sharded);
}

// The variational fit: over all the shards where the rows are sharded; else on the
// target's families where given, or on the data.
// Its restarts run side by side on the fit's threads unless the data are large, where each
// restart's per-row state would cost as much memory again.
VbResult variational_fit(const RunState& run, const Families* families) {
    if (run.o.variational) return *run.o.variational;
    if (run.o.sharded) return run.o.sharded_variational(run.o.vb);
    VbOptions vo = run.o.vb;
    if (!run.data.large()) vo.threads = std::max(vo.threads, run.o.threads);
    return families ? variational(run.graph, *families, vo) : variational(run.graph, run.data, vo);
}

void build_early_proposal(RunState& run, inference::ChunkShare* with) {
    LaplaceProposalOptions lo = laplace_options(run.o);
    lo.share = with;
    run.early = laplace_proposal(*run.target, prior_mean(run.graph), lo);
}

struct BesideTimes {
    Clock::time_point main_done, vb_done;
};

// Two jobs side by side: `vb` (the variational fit) on a second thread, which then joins the
// pilot draws of the exact proposal that this thread builds once `main` has run and returned
// true. Errors are rethrown after both have finished, main's first.
BesideTimes vb_beside(RunState& run, const std::function<void()>& vb, const std::function<bool()>& main) {
    std::exception_ptr main_error, vb_error, proposal_error;
    BesideTimes t{Clock::now(), Clock::now()};
    inference::ChunkShare share;
    inference::run_parts(2, [&](std::size_t part) {
        if (part == 1) {
            try {
                vb();
            } catch (...) {
                vb_error = std::current_exception();
            }
            t.vb_done = Clock::now();
            share.join();
            return;
        }
        struct Closing {
            inference::ChunkShare& s;
            ~Closing() { s.close(); }
        } closing{share};
        bool build = false;
        try {
            build = main();
        } catch (...) {
            main_error = std::current_exception();
        }
        t.main_done = Clock::now();
        if (main_error || !build) return;
        try {
            build_early_proposal(run, &share);
        } catch (...) {
            proposal_error = std::current_exception();
        }
    });
    for (const auto& e : {main_error, vb_error, proposal_error})
        if (e) std::rethrow_exception(e);
    return t;
}

// With every node observed each block's posterior is a Bayesian logistic regression, with
// one mode, so the exact proposal's Newton can start at the prior mean rather than the VB
// mean, and the variational fit needs nothing from the target: with two threads or more the
// fit runs on a worker from the start (on its own copy of the data's patterns), while this
// thread compiles the target and builds the proposal; the worker, once the fit is done,
// joins in the proposal's pilot draws. With one thread the proposal is built after the fit
// (fit_after_target) from the same start, so the draws do not depend on the thread count.
// Where Newton does not get there from the prior mean, it starts from the VB mean after all
// (exact_proposal). At 20 weights a whole run took 10.0 ms against 10.4 with the fit after
// the target (medians of 60 alternated runs).
void fit_beside_target(RunState& run, Clock::time_point t_target) {
    const BesideTimes t = vb_beside(
        run, [&] { run.r.vb = variational_fit(run, nullptr); },
        [&] {
            compile_target(run, false);  // the fit beside it reads the data
            return uses_exact_proposal(*run.method, run.o);
        });
    // The phases as the run waited for them: the target; what is left of the variational fit
    // after it; and, from the end of both, what is left of the proposal.
    run.r.target_seconds = std::chrono::duration<double>(t.main_done - t_target).count();
    if (run.handed) run.handed->drop_values();
    run.proposal_start = std::max(t.main_done, t.vb_done);
    run.r.vb_seconds = std::chrono::duration<double>(run.proposal_start - t.main_done).count();
}

// The target, then the variational fit on it (and, where every node is observed, the exact
// proposal from the prior mean as fit_beside_target builds it: with two threads or more
// beside the fit, which then joins the proposal's pilot draws, as there; with one, after it).
void fit_after_target(RunState& run, Clock::time_point t_target, bool proposal_from_prior) {
    compile_target(run, true);  // the fit below reads the target's families
    run.r.target_seconds = inference::seconds_since(t_target);
    const auto t0 = Clock::now();
    const auto fit_on_target = [&] { run.r.vb = variational_fit(run, &run.target->families()); };
    const bool proposal = proposal_from_prior && uses_exact_proposal(*run.method, run.o);
    if (proposal && run.o.threads > 1) {
        run.proposal_start = vb_beside(run, fit_on_target, [] { return true; }).vb_done;
    } else {
        fit_on_target();
        run.proposal_start = Clock::now();
    }
    run.r.vb_seconds = std::chrono::duration<double>(run.proposal_start - t0).count();
    if (proposal && run.o.threads < 2) build_early_proposal(run, nullptr);
}

// Stage 3: the posterior as the kernels need it: the compiled target, the variational fit,
// the exact posterior's modes (small models with unobserved values, for the methods that
// search them) or its Laplace proposal (the independence kernels).
void prepare_posterior(RunState& run) {
    const FitOptions& o = run.o;
    // The chains, the pilot and the summary split their work over threads: started now, they
    // are running by the time the first of those needs them (one at least where the proposal is
    // built beside the variational fit).
    run.unobserved = has_unobserved_values(run.graph, run.data);
    const bool proposal_beside_vb = !run.unobserved && uses_exact_proposal(*run.method, o);
    if (o.threads > 1)
        inference::start_workers(static_cast<std::size_t>(std::max(proposal_beside_vb ? 1 : 0, std::min(o.threads, o.chains) - 1)));
    const auto t_target = Clock::now();
    if (proposal_beside_vb && o.threads > 1 && !run.data.large())
        fit_beside_target(run, t_target);
    else
        fit_after_target(run, t_target, proposal_beside_vb);
    for (const auto& n : run.target->notes()) run.r.notes.push_back(n);
    if (o.sharded)
        run.r.notes.push_back(fmt::format("rows sharded into {} shards: the variational fit and every evaluation of the "
                                          "log density sum all of them",
                                          o.shards));

    const VbFit& q = run.r.vb.best_fit();
    if (searches_modes(*run.method, run.graph, run.unobserved))
        run.modes = search_modes(run.graph, *run.target, q, o);
    if (run.modes.empty()) run.exact = exact_proposal(*run.method, *run.target, q, o, std::move(run.early), run.r.notes);
}

// Stage 3b: every independence proposal is checked before use. The exact posterior's
// proposals carry their own pilot (laplace_proposal, the modes' PMC fit); the variational
// one, which the independence kernels fall back to where the blocks are coupled or Newton
// fails, is checked here by its pilot k̂ (variational_proposal_k). Above 0.5 the weights
// p/q have infinite variance (inference/psis.hpp), and an independence chain from q is then
// not geometrically ergodic: it sticks in the tails q misses (varmix accepted 0.7% of its
// block moves on a two-disease diagnosis network, 1 in 15,704 on a latent-class survey;
// at k̂ 0.59 on naive Bayes with a sometimes-missing class it reached R-hat 1.010 where
// NUTS gave 1.006 in half the time). Then `auto` takes NUTS, which needs no proposal, and
// an explicitly chosen method gets a note saying what to expect.
constexpr double kProposalKhat = 0.5;

// `auto`'s first choice replaced by NUTS, which needs no proposal: the proposal's note dropped,
// and the choice's note saying why.
void fall_back_to_nuts(RunState& run, const std::string& why) {
    run.method = &method_info(Method::nuts);
    run.r.method = run.method->name;
    std::erase_if(run.r.notes, [](const std::string& n) { return n.rfind("independence proposal: ", 0) == 0; });
    for (auto& n : run.r.notes)
        if (n.rfind("method auto chose ", 0) == 0) n = "method auto chose nuts: " + why;
}

// Above mode_search_max_dim weights with values summed out, `auto` does not gamble on the pilot.
// Its caller has found no exact proposal, which with unobserved values above that size means
// summed-out values couple the blocks (or Newton failed): varmix would move one block at a
// time from the variational fit (no modes are searched), and where they correlate the blocks such
// moves mix slowly however well q fits. On the corpus (seeds 1-5, tests/corpus/check.py)
// varmix passed the pilot on naive_bayes at seeds 2-5 and responder_trial at seed 4, and there
// reached a smallest ESS of 185-510 (responder_trial failing at R-hat 1.018) in 1.6-2.3 s,
// where NUTS reached 2,547-2,867 in 0.6-0.8 s.
bool no_exact_proposal_takes_nuts(RunState& run) {
    if (!run.by_auto || run.graph.dim <= mode_search_max_dim) return false;
    fall_back_to_nuts(run, fmt::format("hidden or missing values and more than {} weights, with no exact proposal for each "
                                       "block, so varmix would move one block at a time from the variational fit, which mixes "
                                       "slowly where summed-out values correlate the blocks",
                                       mode_search_max_dim));
    return true;
}

void check_variational_proposal(RunState& run) {
    if (!run.method->independence_proposal || !run.modes.empty() || run.exact || run.method->samples_unobserved) return;
    if (run.unobserved && no_exact_proposal_takes_nuts(run)) return;
    const double k = variational_proposal_k(*run.target, run.r.vb.best_fit(), run.o);
    const bool fits = k <= kProposalKhat;
    const std::string pilot = fmt::format("the variational proposal fits the exact posterior {} (pilot k-hat {:.2f} over {} "
                                          "draws{})",
                                          fits ? "well enough" : "poorly", k, variational_pilot_draws,
                                          fits ? "" : fmt::format(", above {}", kProposalKhat));
    if (fits) {
        run.r.notes.push_back(pilot);
        return;
    }
    if (!run.by_auto) {
        run.r.notes.push_back(pilot + ": expect sticky chains; --method nuts may mix better");
        return;
    }
    fall_back_to_nuts(run, fmt::format("{}, so {}'s independence moves would stick", pilot, run.r.method));
}

// Stage 3c: varblock's tail probe of the exact proposal (varblock_tail_flags). A flagged block
// gets heavier tails and a random walk after each block move (runtime/sampling/kernels.cpp),
// which keeps blocks of two weights right (every block within 4.5 Monte Carlo errors of its
// grid: tests/runtime/test_many_blocks_grid.cpp) and did on held-out blocks of 4 and 6 (against
// Stan, docs/methods.md), but a walk's steps shrink as 1/sqrt(d): on a 16-weight and a
// 13-weight block with 40-60 rows varblock reached min ESS 27-233 of 4,000 at R-hat up to 1.06,
// where NUTS reached 2,250-2,640 at R-hat 1.005. So `auto` takes NUTS where a flagged block has
// more than max_walked_block weights, the size the grid checks.
constexpr int max_walked_block = 2;

void check_varblock_tails(RunState& run) {
    if (run.method->id != Method::varblock || !run.exact) return;
    run.tails = varblock_tail_flags(*run.target, *run.exact, run.o);
    if (!run.by_auto) return;
    int largest = 0, flagged = 0;
    for (std::size_t b = 0; b < run.tails.size(); ++b)
        if (run.tails[b]) {
            ++flagged;
            largest = std::max(largest, run.target->block_size(static_cast<int>(b)));
        }
    if (largest <= max_walked_block) return;
    fall_back_to_nuts(run, fmt::format("the exact posterior's tails reach past the independence proposal of {} block{} (probed "
                                       "beyond its draws), the largest of {} weights, where varblock's random walk mixes slowly",
                                       flagged, flagged == 1 ? "" : "s", largest));
}

// The reported values' order and names (output_order).
void name_outputs(FitResult& r, const ir::Graph& graph) {
    r.order = output_order(graph);
    for (int k : r.order) {
        r.names.push_back(graph.theta_name(k));
        r.csv_names.push_back(graph.theta_csv_name(k));
    }
}

// Stage 4: initial points dispersed around the variational fit (wider than it), so chains
// start apart and R-hat can see a failure to mix; stream 1 of the seed, apart from the chains'.
std::vector<Eigen::VectorXd> initial_points(const ir::Graph& graph, const VbFit& q, const FitOptions& o) {
    inference::Rng init_rng(o.seed, 1);
    inference::GaussianProposal init = q.proposal(4.0, o.init_inflation);
    std::vector<Eigen::VectorXd> inits;
    for (int c = 0; c < o.chains; ++c) {
        Eigen::VectorXd x(graph.dim);
        init.sample(init_rng, x);
        inits.push_back(std::move(x));
    }
    return inits;
}

// Stage 5: the method's kernel, by its row of the registry (runtime/sampling/kernels.hpp).
std::unique_ptr<inference::Kernel> build_kernel(RunState& run) {
    const KernelInputs in{run.graph, run.data,  *run.target, run.r.vb.best_fit(),
                          run.o,     run.modes, run.exact ? &*run.exact : nullptr,
                          run.exact && !run.tails.empty() ? &run.tails : nullptr};
    KernelBuild b = run.method->build(in);
    if (!run.graph.scales.empty() && run.method->scales == ScaleMoves::cycled) {
        std::vector<std::unique_ptr<inference::Kernel>> parts;
        parts.push_back(std::move(b.kernel));
        parts.push_back(std::make_unique<ScaleSliceKernel>(run.graph));
        b.kernel = std::make_unique<inference::Cycle>(std::move(parts));
        b.notes.push_back(fmt::format("{}: each sweep is followed by a slice-sampling step of every learned scale given "
                                      "its weights",
                                      run.method->name));
    }
    for (auto& n : b.notes) run.r.notes.push_back(std::move(n));
    run.r.adapt_delta = b.adapt_delta;
    run.r.kernel = b.kernel->name();
    return std::move(b.kernel);
}

// Stage 5b: where sign flips or exchanges of hidden nodes are symmetries of the likelihood
// that a fixed offset or the prior breaks (lang/approximate_symmetry.hpp), each of the method's
// steps is followed by a symmetry jump (inference/symmetry_jump.hpp): the flipped or exchanged
// copies of a mode are minor modes that a local or independence kernel rarely reaches, and the
// jump reaches them in one move, accepted by the exact posterior ratio. Not for gibbs, whose
// state holds the hidden values: its density is the complete-data one, which a move of θ alone
// does not map.
std::unique_ptr<inference::Kernel> with_symmetry_jumps(RunState& run, std::unique_ptr<inference::Kernel> kernel) {
    if (run.method->samples_unobserved) return kernel;
    run.r.approximate_flips = lang::find_approximate_flips(run.graph);
    run.r.approximate_swaps = lang::find_approximate_swaps(run.graph);
    if (!run.r.symmetry_jumps()) return kernel;
    std::string flips, swaps;
    for (const auto& f : run.r.approximate_flips) flips += fmt::format("{}{{{}}}", flips.empty() ? "" : ", ", f.name);
    for (const auto& w : run.r.approximate_swaps) swaps += fmt::format("{}{{{}}}", swaps.empty() ? "" : ", ", w.name);
    std::vector<inference::SignedPermutation> generators = symmetry_generators(run.r.approximate_flips, run.r.approximate_swaps);
    if (!run.r.approximate_swaps.empty())
        if (NamedMoves exact = exact_generators(run.graph, run.r.symmetries); !exact.moves.empty() && !normalizes(exact.moves, generators)) {
            generators.insert(generators.end(), exact.moves.begin(), exact.moves.end());
            run.r.exact_jump_moves = std::move(exact.moves);
            run.r.exact_jump_names = std::move(exact.names);
        }
    auto jump = std::make_unique<inference::SymmetryJump>(std::move(kernel), generators);
    const std::size_t n = jump->moves().size();
    if (swaps.empty())
        run.r.notes.push_back(fmt::format("symmetry jumps: after each step the chains propose flipping {} with their weights "
                                          "({} flip{} in all), accepted by the exact posterior ratio, so that the flipped "
                                          "copies, minor modes the model's offsets or priors do not quite rule out, are "
                                          "visited in proportion to their mass",
                                          flips, n, n == 1 ? "" : "s"));
    else
        run.r.notes.push_back(fmt::format("symmetry jumps: after each step the chains propose {}{}exchanging {} with their "
                                          "weights ({} move{} in all{}{}), accepted by the exact posterior "
                                          "ratio, so that the {} copies, minor modes the model's offsets or priors do not "
                                          "quite rule out, are visited in proportion to their mass",
                                          flips.empty() ? "" : "flipping ", flips.empty() ? "" : flips + " or ", swaps, n,
                                          n == 1 ? "" : "s",
                                          run.r.exact_jump_moves.empty() ? "" : ", with the exact labelings' generators",
                                          n > generators.size() ? ", products included" : "",
                                          flips.empty() ? "exchanged" : "flipped and exchanged"));
    run.r.kernel = jump->name();
    return jump;
}

// Stage 6: the chains, in parallel; their wall time split in the proportion they spent in
// warmup and sampling. Throws Error(inference) when every chain failed.
void run_all_chains(RunState& run, const inference::Kernel& kernel, const std::vector<Eigen::VectorXd>& inits) {
    FitResult& r = run.r;
    std::unique_ptr<GibbsModel> gibbs_model;
    std::unique_ptr<inference::DensityFactory> factory;
    if (run.method->samples_unobserved) {
        gibbs_model = std::make_unique<GibbsModel>(run.graph, *run.target);
        factory = std::make_unique<GibbsDensityFactory>(*gibbs_model);
    } else {
        factory = std::make_unique<TargetDensityFactory>(*run.target);
    }
    inference::ChainSettings s;
    inference::copy_chain_settings(run.o, s);
    r.proposal_seconds = inference::seconds_since(run.proposal_start);
    const auto t1 = Clock::now();
    inference::ChainCallbacks callbacks = run.o.callbacks;
    const ir::Graph& graph = run.graph;
    if (!callbacks.parameter_name) callbacks.parameter_name = [&graph](int i) { return graph.theta_name(i); };
    // θ holds each learned scale's log; the kept draws hold τ itself, as users read it.
    callbacks.log_coordinates.clear();
    for (const ir::Scale& sc : graph.scales) callbacks.log_coordinates.push_back(sc.theta_index);
    r.chains = inference::run_chains(*factory, kernel, inits, s, callbacks);
    const double wall = inference::seconds_since(t1);

    double w = 0, d = 0;
    int failed = 0;
    for (const auto& c : r.chains) {
        w += c.warmup_seconds;
        d += c.sampling_seconds;
        if (!c.ok()) ++failed;
    }
    r.warmup_seconds = w + d > 0 ? wall * w / (w + d) : 0;
    r.sampling_seconds = wall - r.warmup_seconds;
    if (failed == run.o.chains) {
        std::string msg = "every chain failed:";
        for (const auto& c : r.chains) msg += fmt::format("\n  {}", c.error);
        throw Error(ErrorKind::inference, msg);
    }
}

FitResult fit_run(const ir::Graph& graph, const Dataset& data, const FitOptions& o, Dataset* handed) {
    validate_options(graph, data, o);
    RunState run(graph, data, o, handed);
    resolve_method(run);
    prepare_posterior(run);
    check_variational_proposal(run);
    check_varblock_tails(run);
    // Only now is the method final (the pilot check may have replaced auto's first choice), so
    // the output files' headers, written from here, record the sampler that will run.
    if (o.on_vb) o.on_vb(run.r.vb.best_fit(), run.r.method);
    name_outputs(run.r, graph);
    const std::vector<Eigen::VectorXd> inits = initial_points(graph, run.r.vb.best_fit(), o);
    const std::unique_ptr<inference::Kernel> kernel = with_symmetry_jumps(run, build_kernel(run));
    if (o.on_note)
        for (const auto& n : run.r.notes) o.on_note(n);
    run_all_chains(run, *kernel, inits);
    if (run.r.symmetry_jumps()) run.r.target = std::move(run.target);
    return std::move(run.r);
}

}  // namespace

FitResult fit(const ir::Graph& graph, const Dataset& data, const FitOptions& o) {
    return fit_run(graph, data, o, nullptr);
}

FitResult fit(const ir::Graph& graph, Dataset&& data, const FitOptions& o) {
    return fit_run(graph, data, o, &data);
}

}  // namespace vbn
