// Signed permutations and the move sets the symmetry jumps propose
// (inference/signed_permutation.hpp): products and inverses act as maps do, and a set is the
// group its generators make, each element once, or the generators and their inverses.
#include "inference/signed_permutation.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace vbn::inference;

namespace {

Eigen::VectorXd applied(const SignedPermutation& g, const Eigen::VectorXd& x) {
    Eigen::VectorXd out;
    g.apply(x, out);
    return out;
}

// The product a word names: g_{w0} g_{w1} …, an entry −(k + 1) standing for g_k⁻¹.
SignedPermutation product_of(const std::vector<int>& word, const std::vector<SignedPermutation>& generators) {
    SignedPermutation g;
    for (int w : word) g = compose(g, w >= 0 ? generators[static_cast<std::size_t>(w)] : inverse(generators[static_cast<std::size_t>(-w - 1)]));
    return g;
}

}  // namespace

TEST_CASE("signed permutations: apply, compose and invert as linear maps") {
    const Eigen::Vector4d x(1, 2, 3, 4);
    const SignedPermutation flip = SignedPermutation::negation({2, 0, 2});
    CHECK(applied(flip, x).isApprox(Eigen::Vector4d(-1, 2, -3, 4)));
    CHECK(flip.negation_only());
    CHECK(flip.support() == std::vector<int>{0, 2});
    const SignedPermutation swap = SignedPermutation::permutation({1, 0, 2, 3});  // x'_0 = x_1, x'_1 = x_0
    CHECK(applied(swap, x).isApprox(Eigen::Vector4d(2, 1, 3, 4)));
    CHECK_FALSE(swap.negation_only());
    CHECK(SignedPermutation::permutation({0, 1, 2}).identity());
    CHECK_THROWS_AS(SignedPermutation::permutation({0, 0, 2}), std::invalid_argument);
    // (g h) x = g (h x), and g⁻¹ undoes g.
    const SignedPermutation gh = compose(flip, swap);
    CHECK(applied(gh, x).isApprox(applied(flip, applied(swap, x))));
    CHECK(applied(compose(swap, flip), x).isApprox(Eigen::Vector4d(2, -1, -3, 4)));
    CHECK(applied(inverse(gh), applied(gh, x)).isApprox(x));
    CHECK(compose(gh, inverse(gh)).identity());
    CHECK(compose(swap, swap).identity());
}

TEST_CASE("move sets: a flip and an exchange generate the 8 symmetries of a square, each once") {
    // Negating x_0, and exchanging x_0 with x_1: the dihedral group of order 8 on (x_0, x_1),
    // whose products include the quarter turns, which are not their own inverses.
    const std::vector<SignedPermutation> gens{SignedPermutation::negation({0}), SignedPermutation::permutation({1, 0, 2})};
    const MoveSet set = move_set(gens);
    CHECK(set.closed);
    REQUIRE(set.moves.size() == 7);
    // The subsets' products first, in mask order: g0, g1, g0 g1.
    CHECK(set.moves[0] == gens[0]);
    CHECK(set.moves[1] == gens[1]);
    CHECK(set.moves[2] == compose(gens[0], gens[1]));
    const Eigen::Vector3d x(1, 2, 5);
    std::vector<Eigen::Vector3d> images;
    for (std::size_t k = 0; k < set.moves.size(); ++k) {
        CAPTURE(k);
        CHECK_FALSE(set.moves[k].identity());
        CHECK(product_of(set.words[k], gens) == set.moves[k]);
        CHECK(std::count(set.moves.begin(), set.moves.end(), inverse(set.moves[k])) == 1);  // closed under inverses
        const Eigen::VectorXd y = applied(set.moves[k], x);
        CHECK(y[2] == 5);
        images.push_back(y);
    }
    // The orbit of (1, 2): every signed arrangement but the identity's, each once.
    for (std::size_t a = 0; a < images.size(); ++a)
        for (std::size_t b = a + 1; b < images.size(); ++b) CHECK_FALSE(images[a].isApprox(images[b]));
    // A cap below the group's size: the generators and their inverses alone (a quarter turn
    // and its inverse are two moves).
    const SignedPermutation turn = compose(gens[0], gens[1]);
    const MoveSet capped = move_set({turn}, 8, 2);
    CHECK_FALSE(capped.closed);
    REQUIRE(capped.moves.size() == 2);
    CHECK(capped.moves[1] == inverse(turn));
    CHECK(capped.words[1] == std::vector<int>{-1});
    CHECK(move_set({turn}).moves.size() == 3);  // the turns by 90, 180 and 270 degrees
}
