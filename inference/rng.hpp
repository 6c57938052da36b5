// Random numbers that are the same bit for bit on every platform and thread schedule.
//
// xoshiro256++ (Blackman & Vigna) seeded through splitmix64 from (seed, stream): each chain
// or task owns a stream, so results never depend on which thread ran it. Uniforms and
// normals are derived here rather than through <random>'s distributions, whose output is
// implementation-defined.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace vbn::inference {

class Rng {
public:
    using result_type = std::uint64_t;

    Rng(std::uint64_t seed, std::uint64_t stream = 0) { reseed(seed, stream); }

    void reseed(std::uint64_t seed, std::uint64_t stream) {
        std::uint64_t x = seed ^ (0x9E3779B97F4A7C15ULL * (stream + 1));
        for (auto& w : s_) w = splitmix64(x);
        has_spare_ = false;
    }

    static constexpr result_type min() { return 0; }
    static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }

    result_type operator()() {
        const std::uint64_t result = rotl(s_[0] + s_[3], 23) + s_[0];
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform on (0, 1): never exactly 0 or 1, so log(u) is finite.
    double uniform() { return (static_cast<double>((*this)() >> 11) + 0.5) * 0x1.0p-53; }

    // Standard normal by the Marsaglia polar method.
    double normal() {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        double u, v, s;
        do {
            u = 2.0 * uniform() - 1.0;
            v = 2.0 * uniform() - 1.0;
            s = u * u + v * v;
        } while (s >= 1.0 || s == 0.0);
        const double f = std::sqrt(-2.0 * std::log(s) / s);
        spare_ = v * f;
        has_spare_ = true;
        return u * f;
    }

    // true with probability p.
    bool bernoulli(double p) { return uniform() < p; }

    // Uniform integer in [0, n), n > 0 (Lemire's nearly divisionless method).
    std::uint64_t below(std::uint64_t n) {
        __uint128_t m = static_cast<__uint128_t>((*this)()) * n;
        auto low = static_cast<std::uint64_t>(m);
        if (low < n) {
            const std::uint64_t threshold = (0 - n) % n;
            while (low < threshold) {
                m = static_cast<__uint128_t>((*this)()) * n;
                low = static_cast<std::uint64_t>(m);
            }
        }
        return static_cast<std::uint64_t>(m >> 64);
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static std::uint64_t splitmix64(std::uint64_t& x) {
        std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    std::uint64_t s_[4]{};
    double spare_ = 0;
    bool has_spare_ = false;
};

}  // namespace vbn::inference
