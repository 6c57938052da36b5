// A multivariate Gaussian or Student-t distribution used as an MCMC proposal: the variational
// posterior N(μ̂, Σ̂) of variational-mcmc.txt §4.1, its per-block marginals (§4.2: "a Gaussian
// whose mean is a subset of the elements of the mean of the original variational distribution
// and whose covariance is the corresponding block-diagonal component"), or a heavier-tailed t
// with the same location and scale.
//
// The scale is held as its lower Cholesky factor L (L L' = Σ), so sampling is μ + L z and the
// density needs one triangular solve: no inverse is ever formed. Σ may be block diagonal (the
// variational posterior factorises over the model's blocks); L is then stored block by block,
// so memory and time are O(Σ block²), not O(dim²). A t with ν degrees of freedom
// is μ + L z / sqrt(g / ν) with g ~ χ²_ν; Σ is then its scale matrix (covariance ν/(ν-2) Σ).
//
// With a triangular map T (inference/triangular_map.hpp; one block only), the draw is
// μ + L T(z) for the same standard z (Gaussian or t), and log q(x) = log q₀(z) − log |∂T/∂z|
// with q₀ the unmapped density and z = T⁻¹(L⁻¹(x − μ)): a skewed proposal whose density is
// exact. mean(), cholesky() and the scale then describe the affine part (μ is where z = 0 maps
// only when T(0) = 0); the whitened coordinates of whiten() and sample_overrelaxed() are z.
//
// With split scales (Geweke 1989's split-t; one block only) each whitened coordinate is
// stretched by a factor of its own on each side of zero before the map and L: z'_k = s_k± z_k,
// s_k+ for z_k > 0 and s_k− below, a bijection that keeps each coordinate's sign, with
// log |∂z'/∂z| = Σ_k log s_k± on each orthant. log q(x) = log q₀(z) − Σ_k log s_k± − log |∂T/∂z'|,
// exact; whiten() then returns z (before the stretch). A side of the posterior bounded only by
// the prior, far wider than the mode's curvature says, gets a side of the proposal as wide.
//
// Sampling and evaluation use scratch space owned by the object and allocate nothing, so one
// object must not be used by two threads at once (each kernel clone owns its copy).
#pragma once

#include "inference/rng.hpp"
#include "inference/triangular_map.hpp"

#include <Eigen/Core>

#include <limits>
#include <memory>
#include <vector>

namespace vbn::inference {

class GaussianProposal {
public:
    static constexpr double gaussian_df = std::numeric_limits<double>::infinity();

    GaussianProposal() = default;

    // N(mean, covariance), or t_df(mean, covariance) when df is finite. Throws
    // std::invalid_argument naming the problem when the sizes differ, an entry is not finite,
    // the matrix is not symmetric positive definite, or df is not positive.
    GaussianProposal(Eigen::VectorXd mean, const Eigen::MatrixXd& covariance, double df = gaussian_df);

    // Block diagonal: Σ = diag(blocks[0], blocks[1], ...), consecutive along the mean (the
    // block sizes must add up to its length), each symmetric positive definite. Throws as above.
    GaussianProposal(Eigen::VectorXd mean, const std::vector<Eigen::MatrixXd>& blocks, double df = gaussian_df);

    // The same from a lower Cholesky factor (its strictly upper part is ignored).
    static GaussianProposal from_cholesky(Eigen::VectorXd mean, Eigen::MatrixXd lower, double df = gaussian_df);

    int dim() const { return static_cast<int>(mean_.size()); }
    double df() const { return df_; }
    bool is_student_t() const { return df_ != gaussian_df; }
    const Eigen::VectorXd& mean() const { return mean_; }
    Eigen::MatrixXd cholesky() const;      // L as one dim × dim matrix (zero between blocks)
    Eigen::MatrixXd scale_matrix() const;  // L L' as one dim × dim matrix
    int block_count() const { return static_cast<int>(chol_.size()); }  // 1 unless block diagonal
    Eigen::VectorXd scale_diagonal() const;  // diag(L L'), without forming L L'

    // Multiplies the scale matrix by factor > 0 (a wider proposal keeps the importance weights
    // p/q bounded where the variational fit is too narrow: Corollary 1, eq. 12). A map is kept
    // (its skew then applies in the widened coordinates).
    void inflate(double factor);

    // The same location, scale and map with df degrees of freedom (infinity: Gaussian).
    void set_df(double df);

    // Skews the proposal by a triangular map of its whitened coordinates (see above); null
    // removes it. Throws std::invalid_argument for a block-diagonal proposal or a map of
    // another dimension.
    void set_map(std::shared_ptr<const TriangularMap> map);
    bool has_map() const { return map_ != nullptr; }

    // Stretches whitened coordinate k by below[k] where it is negative and above[k] where it is
    // positive (see above); empty vectors remove the stretch. Throws std::invalid_argument for a
    // block-diagonal proposal, sizes other than dim() or a factor that is not positive and finite.
    void set_split(const Eigen::Ref<const Eigen::VectorXd>& below, const Eigen::Ref<const Eigen::VectorXd>& above);
    bool has_split() const { return split_below_.size() > 0; }
    // μ + L z of a standard Gaussian or t z, with neither a triangular map nor split scales:
    // only then are its marginals and sub-blocks proposals of the same kind, and its draws
    // made straight from z.
    bool affine() const { return !has_map() && !has_split(); }
    const Eigen::VectorXd& split_below() const { return split_below_; }
    const Eigen::VectorXd& split_above() const { return split_above_; }

    // The point whose whitened coordinates are z (before any stretch), μ + L T(z'), into out;
    // returns log q there.
    double point(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> out);

    // Replaces the location and the scale's lower Cholesky factor (its strictly upper part is
    // ignored), keeping the family and df and reusing the storage, so an adaptive kernel can
    // re-fit its proposal without allocating (a block-diagonal proposal becomes a dense one; a
    // map and a stretch are removed: the re-fit is the plain t or Gaussian of those moments). Throws std::invalid_argument, leaving the
    // proposal unchanged, on a size mismatch, a non-finite entry or a diagonal entry <= 0.
    void assign(const Eigen::Ref<const Eigen::VectorXd>& mean, const Eigen::Ref<const Eigen::MatrixXd>& lower);

    // The marginal of coordinates offset .. offset+size-1 (same family and df); block diagonal
    // when the range covers several blocks. With a map, only the whole range (the proposal
    // itself) has one here: other ranges throw std::invalid_argument.
    GaussianProposal marginal(int offset, int size) const;

    // One draw into out (size dim()).
    void sample(Rng& rng, Eigen::Ref<Eigen::VectorXd> out);

    // log q(x), normalised.
    double log_density(const Eigen::Ref<const Eigen::VectorXd>& x);

    // The whitened coordinates u = L⁻¹(x − μ) of x into u (size dim()); returns log q(x), the
    // same bits as log_density(x).
    double whiten(const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> u) const;

    // An overrelaxed draw (Adler 1981; Barone & Frigessi 1990) from the point whose whitened
    // coordinates are u, for -1 < alpha < 1:
    //     u* = α u + sqrt(1 − α²) ε / sqrt(λ),   ε ~ N(0, I),   x* = μ + L u*,
    // with λ = 1 for a Gaussian; a t_ν is the scale mixture of N(0, I/λ) over λ ~ Gamma(ν/2,
    // rate ν/2), and λ is drawn from its conditional given u, Gamma((ν + d)/2, rate (ν + |u|²)/2).
    // Given λ the step is the AR(1) move that leaves N(0, I/λ) invariant and is reversible
    // with respect to it, and the draw of λ given u is a Gibbs step, so the proposal kernel is
    // reversible with respect to q itself: q(x) Q(x → x*) = q(x*) Q(x* → x). An MH test against
    // a target p therefore accepts with the independence sampler's ratio
    // [p(x*) / q(x*)] / [p(x) / q(x)]. With α < 0 successive draws are negatively correlated
    // where p is close to q (antithetic), which lowers the variance of means. Writes x* into
    // out and u* into u_out (which must not alias u); returns log q(x*).
    double sample_overrelaxed(Rng& rng, double alpha, const Eigen::Ref<const Eigen::VectorXd>& u,
                              Eigen::Ref<Eigen::VectorXd> out, Eigen::Ref<Eigen::VectorXd> u_out);
    // sample_overrelaxed in two halves, for a kernel that draws its proposals ahead of the
    // point they start from: the random numbers (dim() standard normals into `normals`,
    // then, for a t, a χ²(ν + d) draw, returned; 0 for a Gaussian), and the draw from u
    // given them. The two in turn are sample_overrelaxed: the same numbers, the same bits.
    double overrelax_noise(Rng& rng, Eigen::Ref<Eigen::VectorXd> normals) const;
    double overrelaxed_from(double alpha, const Eigen::Ref<const Eigen::VectorXd>& u,
                            const Eigen::Ref<const Eigen::VectorXd>& normals, double chi_square,
                            Eigen::Ref<Eigen::VectorXd> out, Eigen::Ref<Eigen::VectorXd> u_out);

    // The same draw as sample() (the same random numbers, in the same order) and its log q,
    // from the draw's own standard normals rather than by solving with the Cholesky factor
    // again: equal to log_density(out) to rounding, for an independence sampler's proposal.
    double sample_log_density(Rng& rng, Eigen::Ref<Eigen::VectorXd> out);

private:
    void finish();  // checks, log normaliser, scratch
    double draw(Rng& rng, Eigen::Ref<Eigen::VectorXd> out);  // sample(); returns the draw's log q
    // out = μ + L T(z') (T the identity without a map, z' = z without split scales); returns log q there given |z|².
    double place(const Eigen::Ref<const Eigen::VectorXd>& z, double mahalanobis, Eigen::Ref<Eigen::VectorXd> out);
    double log_density_at(double mahalanobis) const;
    // z' of z (or z of z'); returns log |∂z'/∂z|.
    double stretch(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> out, bool inverse = false) const;
    void times_lower(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> out) const;  // out = L z

    Eigen::VectorXd mean_;
    std::vector<Eigen::MatrixXd> chol_;       // lower Cholesky factor of each diagonal block,
                                              // zeros above the diagonal (times_lower reads them)
    std::vector<Eigen::Index> block_offset_;  // where each block starts in the mean
    double df_ = gaussian_df;
    double log_norm_ = 0;
    Eigen::VectorXd scratch_;
    std::shared_ptr<const TriangularMap> map_;  // shared by copies (it is never changed)
    Eigen::VectorXd map_y_;                     // T(z)
    Eigen::VectorXd split_below_, split_above_;          // the stretch of each whitened coordinate, or empty
    Eigen::VectorXd log_split_below_, log_split_above_;  // their logs
    Eigen::VectorXd split_z_;                            // z' = the stretched z
};

// A χ²_df draw (Marsaglia & Tsang's gamma method), for the t's mixing variable.
double sample_chi_square(Rng& rng, double df);

}  // namespace vbn::inference
