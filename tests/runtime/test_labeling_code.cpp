// Dense labeling codes (runtime/report/code.hpp) against the sparse signed permutations they
// are made from (inference/signed_permutation.hpp), whose composition and inverse are tested on
// their own: a code must act on a vector as its permutation does, compose in the same order
// ((a b) x = a (b x), the order the relabelling's group closure relies on) and invert to the
// identity. Each check has a pair that does not commute, so a reversed order would fail it.
#include "runtime/report/code.hpp"

#include "inference/signed_permutation.hpp"

#include <doctest/doctest.h>

#include <Eigen/Core>

#include <vector>

namespace {

using namespace vbn;
using inference::SignedPermutation;

constexpr int n = 5;

// A 3-cycle of coordinates 0 → 1 → 2 with a sign on one entry, and a swap of 1 and 3 with the
// flip of 4: neither is an involution of the other, and the two do not commute.
SignedPermutation cycle_with_sign() {
    SignedPermutation g = SignedPermutation::permutation({2, 0, 1, 3, 4});
    for (auto& e : g.entries)
        if (e.to == 1) e.negate = true;
    return g;
}
SignedPermutation swap_and_flip() {
    return inference::compose(SignedPermutation::permutation({0, 3, 2, 1, 4}), SignedPermutation::negation({4}));
}

Eigen::VectorXd probe() {
    Eigen::VectorXd x(n);
    x << 0.5, -1.25, 2.0, 3.5, -4.75;
    return x;
}

Eigen::VectorXd by_code(const code::Code& c, const Eigen::VectorXd& x) {
    Eigen::VectorXd out(x.size());
    code::apply(c, x, out);
    return out;
}

Eigen::VectorXd by_permutation(const SignedPermutation& g, const Eigen::VectorXd& x) {
    Eigen::VectorXd out;
    g.apply(x, out);
    return out;
}

TEST_CASE("a labeling code acts on a vector as its signed permutation does") {
    const Eigen::VectorXd x = probe();
    for (const SignedPermutation& g : {cycle_with_sign(), swap_and_flip(), SignedPermutation{}}) {
        const code::Code c = code::of(g, n);
        CHECK(by_code(c, x) == by_permutation(g, x));
        for (std::size_t j = 0; j < c.size(); ++j) CHECK(code::entry(c, j, x) == by_permutation(g, x)[static_cast<Eigen::Index>(j)]);
    }
    CHECK(by_code(code::identity(n), x) == x);
}

TEST_CASE("codes compose in the order (a b) x = a (b x)") {
    const SignedPermutation a = cycle_with_sign(), b = swap_and_flip();
    const code::Code ab = code::compose(code::of(a, n), code::of(b, n));
    const code::Code ba = code::compose(code::of(b, n), code::of(a, n));
    const Eigen::VectorXd x = probe();
    CHECK(by_code(ab, x) == by_code(code::of(a, n), by_code(code::of(b, n), x)));
    CHECK(ab == code::of(inference::compose(a, b), n));
    // The two orders differ on this pair, so the checks above pin the order down.
    CHECK(ab != ba);
}

TEST_CASE("a code's inverse undoes it on either side") {
    for (const SignedPermutation& g : {cycle_with_sign(), swap_and_flip()}) {
        const code::Code c = code::of(g, n);
        const code::Code inv = code::inverse(c);
        CHECK(code::compose(c, inv) == code::identity(n));
        CHECK(code::compose(inv, c) == code::identity(n));
        CHECK(inv == code::of(inference::inverse(g), n));
        CHECK(by_code(inv, by_code(c, probe())) == probe());
    }
    // A sign-carrying cycle is not its own inverse.
    CHECK(code::inverse(code::of(cycle_with_sign(), n)) != code::of(cycle_with_sign(), n));
}

}  // namespace
