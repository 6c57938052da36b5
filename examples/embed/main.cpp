// A host program that embeds vbn: a model from a string, data from memory, a fit with
// streamed progress, the posterior printed, a prediction and the log evidence. Copy it to
// start your own.
#include <vbn/vbn.hpp>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <mutex>
#include <random>

// Does a symptom depend on an exposure (binary, sometimes not recorded) and on a dose (a
// real number)? A Bayesian logistic regression: logit P(symptom = +1) = b + w[1] exposed + w[2] dose.
const char* const model_text = R"(
covariate dose;
node exposed ~ bernoulli(0.5);
node symptom ~ logistic(b + w * [exposed, dose]);
b ~ normal(0, 2);
w ~ normal(0, 2);
)";

int main() {
    try {
        const vbn::Model model = vbn::Model::from_string(model_text, "symptom model");

        // 500 observations simulated with b = -0.5, w = (1, 1.5): one row each, binary values
        // as +1/-1 and NaN where a value is missing.
        std::mt19937 gen(7);
        auto uniform = [&] { return (gen() + 0.5) / 4294967296.0; };
        Eigen::MatrixXd rows(500, 3);
        for (int r = 0; r < 500; ++r) {
            const double exposed = uniform() < 0.5 ? 1 : -1;
            const double dose = 2 * uniform() - 1;
            const double eta = -0.5 + 1.0 * exposed + 1.5 * dose;
            const double symptom = uniform() < 1 / (1 + std::exp(-eta)) ? 1 : -1;
            rows.row(r) << (r % 25 == 0 ? std::numeric_limits<double>::quiet_NaN() : exposed), dose, symptom;
        }
        const vbn::Dataset data = vbn::Dataset::from_matrix(model, rows, {"exposed", "dose", "symptom"}, "observations");
        std::cout << "data: " << data.rows() << " rows, " << data.patterns() << " distinct\n";

        vbn::FitOptions options;
        options.seed = 42;
        vbn::Callbacks callbacks;
        std::mutex print;
        callbacks.progress = [&](const vbn::Progress& p) {
            std::lock_guard lock(print);
            std::cerr << "chain " << p.chain + 1 << (p.warmup ? " warmup   " : " sampling ") << p.iteration << '/'
                      << p.iterations << '\n';
        };
        callbacks.log = [](vbn::LogLevel level, const std::string& message) {
            std::cerr << (level == vbn::LogLevel::note ? "note: " : "warning: ") << message << '\n';
        };

        // Every draw as it is made (from the chains' threads), in parameter_names() order.
        std::atomic<long> streamed{0};
        callbacks.on_draw = [&](int /*chain*/, int /*draw*/, const Eigen::VectorXd& /*values*/, double /*log_density*/) {
            ++streamed;
        };

        const vbn::FitResult fit = vbn::fit(model, data, options, callbacks);
        std::cout << "streamed " << streamed << " draws\n";

        std::cout << "posterior (" << fit.method << ", " << fit.chains.size() << " chains):\n";
        for (const vbn::SummaryRow& row : fit.summary)
            std::printf("  %-5s mean %7.3f  sd %6.3f  90%% interval [%7.3f, %7.3f]  R-hat %.3f\n", row.name.c_str(), row.mean,
                        row.sd, row.q5, row.q95, row.rhat);
        std::printf("ELBO of the variational fit: %.3f\n", fit.variational.elbo);

        // A prediction for a new patient, exposed, dose 0.5 (symptom unobserved: NaN),
        // averaged over the first chain's draws.
        const double unknown = std::numeric_limits<double>::quiet_NaN();
        const vbn::Dataset patient =
            vbn::Dataset::from_columns(model, {{"exposed", {1}}, {"dose", {0.5}}, {"symptom", {unknown}}}, "new patient");
        const vbn::PredictResult prediction = vbn::predict(model, patient, fit.chains[0].draws);
        std::printf("P(symptom = +1 | exposed, dose 0.5) = %.3f\n", prediction.predictions[0].p);

        // The log evidence log p(data), to compare this model with another (the difference of
        // two is the log Bayes factor); a Pareto k-hat above 0.7 says not to trust it.
        const vbn::EvidenceResult evidence = vbn::evidence(model, data);
        std::printf("log evidence %.3f +- %.3f, k-hat %.2f, ELBO %.3f\n", evidence.log_evidence, evidence.se,
                    evidence.pareto_k, evidence.elbo);
        return 0;
    } catch (const vbn::Error& e) {
        // ModelError, DataError, ... all derive from vbn::Error; e.line()/e.column() locate it.
        std::cerr << e.what() << '\n';
        return 1;
    }
}
