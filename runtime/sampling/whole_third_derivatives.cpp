#include "runtime/sampling/whole_third_derivatives.hpp"

#include "inference/parallel.hpp"

#include <optional>
#include <stdexcept>

namespace vbn {

namespace {

using Vec = Eigen::VectorXd;
using Mat = Eigen::MatrixXd;

// g_y(y) = lower' ∇_θ log p(mode + lower y): the gradient in whitened coordinates.
struct WhitenedGradient {
    const Target& target;
    const Vec& mode;
    const Mat& lower;
    Target::Workspace ws;
    Vec theta, grad;

    WhitenedGradient(const Target& t, const Vec& m, const Mat& l)
        : target(t), mode(m), lower(l), ws(t.make_workspace()), theta(m.size()), grad(m.size()) {}

    // Into out: g_y at y = a e_i + b e_j.
    void at(int i, double a, int j, double b, Eigen::Ref<Vec> out) {
        theta = mode + a * lower.col(i) + b * lower.col(j);
        target.log_density_gradient(theta, grad, ws);
        if (!grad.allFinite()) throw std::invalid_argument("a gradient near the mode is not finite");
        out.noalias() = lower.transpose() * grad;
    }
};

}  // namespace

std::vector<Mat> whole_third_derivatives(const Target& target, const Vec& mode, const Mat& lower, int threads, double h) {
    const int d = static_cast<int>(mode.size());
    // pairs[p] = (i, j ≤ i): column p of `second` holds ∂²g_y/∂y_i∂y_j, that is A[·](i, j).
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < d; ++i)
        for (int j = 0; j <= i; ++j) pairs.emplace_back(i, j);
    Mat second(d, static_cast<Eigen::Index>(pairs.size()));
    Vec centre(d);
    std::vector<std::optional<WhitenedGradient>> grads(static_cast<std::size_t>(std::max(threads, 1)));
    inference::parallel_chunks(threads, pairs.size(), 8, [&](std::size_t begin, std::size_t end, std::size_t part) {
        if (!grads[part]) grads[part].emplace(target, mode, lower);
        WhitenedGradient& g = *grads[part];
        Vec pp(d), pm(d), mp(d), mm(d);
        for (std::size_t p = begin; p < end; ++p) {
            const auto [i, j] = pairs[p];
            if (i == j) {
                // (g(h e_i) − 2 g(0) + g(−h e_i)) / h²: g(0) is added once all are in.
                g.at(i, h, i, 0, pp);
                g.at(i, -h, i, 0, mm);
                second.col(static_cast<Eigen::Index>(p)) = (pp + mm) / (h * h);
            } else {
                g.at(i, h, j, h, pp);
                g.at(i, h, j, -h, pm);
                g.at(i, -h, j, h, mp);
                g.at(i, -h, j, -h, mm);
                second.col(static_cast<Eigen::Index>(p)) = (pp - pm - mp + mm) / (4 * h * h);
            }
        }
    });
    if (!grads[0]) grads[0].emplace(target, mode, lower);
    grads[0]->at(0, 0, 0, 0, centre);
    std::vector<Mat> a(static_cast<std::size_t>(d), Mat::Zero(d, d));
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        const auto [i, j] = pairs[p];
        auto col = second.col(static_cast<Eigen::Index>(p));
        if (i == j) col -= 2 * centre / (h * h);
        for (int k = 0; k < d; ++k) {
            a[static_cast<std::size_t>(k)](i, j) = col[k];
            a[static_cast<std::size_t>(k)](j, i) = col[k];
        }
    }
    // Symmetrise over the index the differences did not take: A_kij = mean over the three
    // placements of k (each estimated by a different set of differences).
    std::vector<Mat> out(static_cast<std::size_t>(d), Mat::Zero(d, d));
    for (int k = 0; k < d; ++k)
        for (int i = 0; i < d; ++i)
            for (int j = 0; j < d; ++j)
                out[static_cast<std::size_t>(k)](i, j) =
                    (a[static_cast<std::size_t>(k)](i, j) + a[static_cast<std::size_t>(i)](k, j) + a[static_cast<std::size_t>(j)](i, k)) / 3;
    for (const Mat& m : out)
        if (!m.allFinite()) throw std::invalid_argument("a third derivative is not finite");
    return out;
}

}  // namespace vbn
