"""Model.fit: shapes, the command line's draws at the same seed, an exact posterior mean,
progress and interruption."""

import math
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
import vbn

MATRIX = """
node x[2] ~ bernoulli(0.5);
node v[3] ~ logistic(b + W * x);
b ~ normal(0, 1);
W ~ normal(0, 1);
"""


def test_draws_are_shaped_chain_draw_then_the_parameter():
    m = vbn.Model.from_string(MATRIX, "matrix")
    data = m.simulate(200, seed=4, quiet=True)
    fit = m.fit(data, chains=3, draws=50, warmup=50, seed=9, quiet=True)
    assert fit.draws["b"].shape == (3, 50, 3)
    assert fit.draws["W"].shape == (3, 50, 3, 2)
    assert fit.sample_stats["lp"].shape == (3, 50)
    frame = fit.draws_frame()
    assert list(frame.columns[:3]) == ["chain", "draw", "lp"]
    # W[k,p] is element (k-1, p-1): the names say where each column goes.
    np.testing.assert_array_equal(fit.draws["W"][1, :, 2, 0], frame.loc[frame.chain == 2, "W[3,1]"].to_numpy())
    np.testing.assert_array_equal(fit.draws["b"][2, :, 1], frame.loc[frame.chain == 3, "b[2]"].to_numpy())
    assert list(fit.summary.index) == m.parameter_names
    assert fit.summary.loc["W[3,1]", "mean"] == pytest.approx(fit.draws["W"][:, :, 2, 0].mean(), rel=1e-12)
    assert fit.method and fit.seed == 9 and fit.chains == 3
    assert fit.table.startswith("Inference for matrix")


def read_cmdstan(path):
    return pd.read_csv(path, comment="#", float_precision="round_trip")


def test_the_same_seed_gives_the_draws_of_vbn_fit(root, vbn_binary, tmp_path, wells):
    model, frame = wells
    fit = model.fit(frame, chains=2, draws=200, warmup=200, seed=17, threads=1, quiet=True)
    out = tmp_path / "w.csv"
    cli = subprocess.run([vbn_binary, "fit", root / "examples/wells/wells.vbn", "--data", root / "examples/wells/wells.csv",
                          "--chains", "2", "--draws", "200", "--warmup", "200", "--seed", "17", "--quiet", "--output", out],
                         capture_output=True, text=True, check=True)
    for c in range(2):
        csv = read_cmdstan(tmp_path / f"w_{c + 1}.csv")
        np.testing.assert_array_equal(fit.draws["a"][c], csv["a"].to_numpy())
        np.testing.assert_array_equal(fit.draws["b"][c], csv[["b.1", "b.2"]].to_numpy())
        np.testing.assert_array_equal(fit.sample_stats["lp"][c], csv["lp__"].to_numpy())
    assert fit.table.splitlines()[2] in cli.stdout  # the table's header line; its numbers follow
    for name in model.parameter_names:
        assert any(line.split()[0] == name for line in cli.stdout.splitlines() if line.strip())


def test_a_nuts_fit_has_the_sampler_statistics_of_the_cli_files_in_arviz_names(root, vbn_binary, tmp_path, wells):
    model, frame = wells
    fit = model.fit(frame, method="nuts", chains=2, draws=60, warmup=60, seed=23, quiet=True)
    subprocess.run([vbn_binary, "fit", root / "examples/wells/wells.vbn", "--data", root / "examples/wells/wells.csv",
                    "--method", "nuts", "--chains", "2", "--draws", "60", "--warmup", "60", "--seed", "23", "--quiet",
                    "--output", tmp_path / "n.csv"], check=True, capture_output=True)
    columns = {"lp": "lp__", "acceptance_rate": "accept_stat__", "step_size": "stepsize__", "tree_depth": "treedepth__",
               "n_steps": "n_leapfrog__", "diverging": "divergent__", "energy": "energy__"}
    assert set(fit.sample_stats) == set(columns)
    for name, values in fit.sample_stats.items():
        assert values.shape == (2, 60), name
    for c in range(2):
        csv = read_cmdstan(tmp_path / f"n_{c + 1}.csv")
        for name, column in columns.items():
            np.testing.assert_array_equal(fit.sample_stats[name][c], csv[column].to_numpy(), err_msg=name)
    stats = fit.sample_stats
    assert stats["diverging"].dtype == bool
    assert ((stats["acceptance_rate"] >= 0) & (stats["acceptance_rate"] <= 1)).all()
    assert (stats["step_size"] > 0).all() and (stats["tree_depth"] >= 0).all() and (stats["n_steps"] >= 1).all()
    assert stats["diverging"].sum() == fit.chain_info["divergent"].sum()
    import xarray as xr
    written = xr.open_dataset(fit.to_netcdf(tmp_path / "n.nc"), group="sample_stats")
    assert set(written.data_vars) == set(columns)
    assert written["tree_depth"].dims == ("chain", "draw") and written["diverging"].dtype == bool
    np.testing.assert_array_equal(written["energy"].values, stats["energy"])
    # A kernel that is not NUTS: the statistics every kernel fills, and no zeros for the rest.
    other = model.fit(frame, method="varblock", chains=1, draws=20, warmup=20, seed=23, quiet=True)
    assert set(other.sample_stats) == {"lp", "acceptance_rate"}


def test_chains_run_on_while_the_ess_is_short_up_to_max_draws_and_draws_alone_is_exact():
    m = vbn.Model.from_string("node y ~ logistic(b);  b ~ normal(0, 2);", "coin")
    data = {"y": [1] * 7 + [-1] * 3}
    # 2 chains of 30 draws cannot give the 200 ESS wanted (100 per chain).
    fit = m.fit(data, chains=2, draws=30, warmup=50, max_draws=400, seed=1, quiet=True)
    n = fit.draws["b"].shape[1]
    assert 30 < n <= 400
    assert any(note.startswith("extending the chains from 30 to ") for note in fit.notes)
    assert fit.options["max_draws"] == 400
    assert m.fit(data, chains=2, draws=30, warmup=50, seed=1, quiet=True).draws["b"].shape == (2, 30)
    with pytest.raises(vbn.UsageError, match="max_draws 20 is below draws 30"):
        m.fit(data, chains=2, draws=30, max_draws=20, seed=1, quiet=True)


def test_the_posterior_mean_of_a_coin_matches_quadrature():
    # b ~ N(0, 2²), seven heads and three tails: p(b | y) ∝ N(b; 0, 4) σ(b)^7 σ(-b)^3.
    m = vbn.Model.from_string("node y ~ logistic(b);  b ~ normal(0, 2);", "coin")
    fit = m.fit({"y": [1] * 7 + [-1] * 3}, seed=3, quiet=True)
    b = np.linspace(-12, 12, 200001)
    logp = -b**2 / 8 - 7 * np.logaddexp(0, -b) - 3 * np.logaddexp(0, b)
    w = np.exp(logp - logp.max())
    mean = (b * w).sum() / w.sum()
    sd = np.sqrt(((b - mean) ** 2 * w).sum() / w.sum())
    row = fit.summary.loc["b"]
    assert abs(row["mean"] - mean) < 4 * row["mcse"]
    assert row["sd"] == pytest.approx(sd, rel=0.05)
    assert fit.draws["b"].mean() == pytest.approx(row["mean"], rel=1e-12)


def test_log_lik_has_a_value_per_draw_and_row(wells):
    model, frame = wells
    fit = model.fit(frame.head(40), chains=2, draws=30, warmup=30, seed=1, log_lik=True, quiet=True)
    assert fit.log_lik.shape == (2, 30, 40)
    assert np.all(fit.log_lik < 0)
    assert model.fit(frame.head(40), chains=1, draws=5, warmup=5, seed=1, quiet=True).log_lik is None


def test_progress_reaches_a_callback_and_its_exception_stops_the_fit(wells):
    model, frame = wells
    seen = []
    model.fit(frame, chains=2, draws=100, warmup=100, seed=1, quiet=False, progress=lambda *p: seen.append(p))
    assert {p[0] for p in seen} == {0, 1}
    assert (0, 100, 100, False) in seen  # the end of chain 1's sampling phase

    def fail(*_):
        raise ValueError("stop here")
    with pytest.raises(ValueError, match="stop here"):
        model.fit(frame, chains=2, draws=100000, warmup=100, seed=1, progress=fail, quiet=True)


def test_bad_options_are_usage_errors(wells):
    model, frame = wells
    with pytest.raises(vbn.UsageError):
        model.fit(frame, method="nonesuch", quiet=True)
    with pytest.raises(vbn.UsageError):
        model.fit(frame, chains=0, quiet=True)


def test_ctrl_c_stops_the_chains_and_raises_keyboard_interrupt(root):
    script = textwrap.dedent(f"""
        import sys, time, vbn
        m = vbn.Model.from_file({str(root / 'examples/wells/wells.vbn')!r})
        started = time.monotonic()
        def progress(*p):
            print("running", flush=True)
        try:
            m.fit({str(root / 'examples/wells/wells.csv')!r}, draws=10**7, seed=1, progress=progress, quiet=True)
        except KeyboardInterrupt:
            print(f"interrupted after {{time.monotonic() - started:.1f}} s", flush=True)
            sys.exit(42)
    """)
    # A shell that starts a job in the background without job control starts it with SIGINT
    # ignored, and Python then installs no KeyboardInterrupt handler: the child starts with
    # SIGINT's default back (Python then installs its handler), so that the test does not
    # depend on how pytest was started.
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=os.getcwd(),
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout.readline().strip() == "running"
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 42, out
    assert "interrupted after" in out


def test_a_fresh_seed_is_said_and_kept(wells, capfd):
    model, frame = wells
    fit = model.fit(frame.head(100), chains=1, draws=20, warmup=20, progress=False)
    err = capfd.readouterr().err
    assert f"note: seed {fit.seed} (pass seed={fit.seed} to repeat this run)" in err
    again = model.fit(frame.head(100), chains=1, draws=20, warmup=20, seed=fit.seed, quiet=True)
    np.testing.assert_array_equal(again.draws["b"], fit.draws["b"])
    with pytest.raises(vbn.UsageError):
        model.fit(frame, seed=-1, quiet=True)


def test_the_default_progress_prints_as_vbn_fit_does_off_a_terminal(wells, capfd):
    model, frame = wells
    model.fit(frame, chains=2, draws=100, warmup=100, seed=1)
    err = capfd.readouterr().err
    for line in ("chain 1 warmup 100/100 (100%)", "chain 2 sampling 100/100 (100%)"):
        assert line in err.splitlines()


COLUMNS = ["flip", "mass", "mcse", "importance", "importance_mcse", "importance_khat"]


def test_modes_give_the_minor_copy_share_of_the_draws(root):
    # examples/paper/multimodal: the copy with h flipped (w[1] negated) is a minor mode that
    # the symmetry jumps visit; a draw is in the copy whose w[1] has its sign.
    m = vbn.Model.from_file(root / "examples/paper/multimodal.vbn")
    fit = m.fit(root / "examples/paper/multimodal.csv", warmup=300, draws=500, seed=3, quiet=True)
    assert list(fit.modes.columns) == COLUMNS
    assert list(fit.modes.flip) == ["h"]
    negative = float((fit.draws["w"][:, :, 0] < 0).mean())
    assert fit.modes.mass[0] == pytest.approx(min(negative, 1 - negative), rel=1e-12)
    assert 0 < fit.modes.mcse[0] < fit.modes.mass[0]
    # weighed again by importance sampling from the major copy: it agrees within the errors
    row = fit.modes.iloc[0]
    assert row.importance_mcse > 0 and row.importance_khat < 0.7
    assert abs(row.importance - row.mass) < 4 * math.hypot(row.mcse, row.importance_mcse)


def test_no_modes_without_an_approximate_symmetry(wells):
    model, frame = wells
    fit = model.fit(frame, chains=2, warmup=100, draws=100, seed=1, quiet=True)
    assert fit.modes.empty and list(fit.modes.columns) == COLUMNS
