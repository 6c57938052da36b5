#include "runtime/sampling/scale_kernel.hpp"

#include "runtime/target/scale_prior.hpp"

#include <algorithm>
#include <cmath>

namespace vbn {

namespace {
constexpr int max_step_out = 50;   // widths stepped out on each side at most
constexpr int max_shrink = 200;    // shrinkages at most (each halves the interval on average)
}  // namespace

ScaleSliceKernel::ScaleSliceKernel(const ir::Graph& graph) {
    for (const ir::Scale& sc : graph.scales) {
        Scale s;
        s.prior = sc;
        scales_.push_back(std::move(s));
    }
}

double scaled_sum_of_squares(const ir::Scale& sc, const Eigen::VectorXd& x) {
    double sum = 0;
    for (std::size_t j = 0; j < sc.weights.size(); ++j) {
        const double r = x[sc.weights[j]] - sc.means[j];
        sum += r * r;
    }
    return sum;
}

// Neal (2003): a level under the density at η, an interval of the current width placed at
// random around η and stepped out until both ends lie below the level, then points drawn
// uniformly from it, shrinking it towards η, until one lies above the level.
void ScaleSliceKernel::step(inference::State& state, inference::Density&, inference::Rng& rng,
                            inference::TransitionInfo& info) {
    for (Scale& s : scales_) {
        // The weights stay put during the step: their sum of squares is taken once.
        const int n = static_cast<int>(s.prior.weights.size());
        const double sum = scaled_sum_of_squares(s.prior, state.x);
        auto conditional = [&](double at) { return scale_log_conditional(s.prior, n, sum, at); };
        const double eta = state.x[s.prior.theta_index];
        const double current = conditional(eta);
        const double level = current + std::log(rng.uniform());
        auto above = [&](double at) { return conditional(at) > level; };
        double lo = eta - s.width * rng.uniform(), hi = lo + s.width;
        for (int i = 0; i < max_step_out && above(lo); ++i) lo -= s.width;
        for (int i = 0; i < max_step_out && above(hi); ++i) hi += s.width;
        double next = eta;
        for (int i = 0; i < max_shrink; ++i) {
            const double at = lo + (hi - lo) * rng.uniform();
            if (above(at)) {
                next = at;
                break;
            }
            (at < eta ? lo : hi) = at;
        }
        state.lp += conditional(next) - current;
        state.x[s.prior.theta_index] = next;
        ++updates_;
        if (adapting_) {
            s.moved += std::abs(next - eta);
            ++s.steps;
        }
    }
    info.accept_stat = 1;
}

void ScaleSliceKernel::begin_warmup(int) {
    adapting_ = true;
    for (Scale& s : scales_) {
        s.moved = 0;
        s.steps = 0;
    }
}

// Neal (2003, Sec. 4.4): a width near the typical distance moved; twice the mean move keeps
// stepping out short, and a width wrong by a factor costs steps, never correctness.
void ScaleSliceKernel::end_warmup() {
    adapting_ = false;
    for (Scale& s : scales_)
        if (s.steps > 0 && s.moved > 0) s.width = std::clamp(2 * s.moved / static_cast<double>(s.steps), 1e-3, 10.0);
}

std::unique_ptr<inference::Kernel> ScaleSliceKernel::clone() const { return std::make_unique<ScaleSliceKernel>(*this); }

void ScaleSliceKernel::collect_stats(std::vector<inference::KernelStats>& out) const {
    out.push_back({name(), updates_, updates_});  // a slice step always moves to a new draw
}

}  // namespace vbn
