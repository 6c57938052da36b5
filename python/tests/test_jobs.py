"""vb, predict, evidence and simulate against the command line and exact answers."""

import io
import subprocess

import numpy as np
import pandas as pd
import pytest
import vbn

COIN = "node y ~ logistic(b);  b ~ normal(0, 2);"


def test_simulate_gives_the_rows_of_vbn_simulate(root, vbn_binary):
    m = vbn.Model.from_file(root / "examples/wells/wells.vbn")
    rows = m.simulate(50, seed=3, quiet=True)
    cli = subprocess.run([vbn_binary, "simulate", root / "examples/wells/wells.vbn", "--rows", "50", "--seed", "3"],
                         capture_output=True, text=True, check=True)
    expected = pd.read_csv(io.StringIO(cli.stdout), float_precision="round_trip")
    pd.testing.assert_frame_equal(rows, expected, check_exact=True)
    assert rows["switched"].isin([1, -1]).all()
    assert set(rows.attrs["parameters"]) == {"a", "b"} and rows.attrs["parameters"]["b"].shape == (2,)


def test_simulate_with_given_parameters():
    m = vbn.Model.from_string(COIN, "coin")
    rows = m.simulate(20000, seed=5, params={"b": 1.0}, quiet=True)
    assert rows.attrs["parameters"]["b"] == 1.0
    # P(y = +1) = σ(1) = 0.7311, with a standard error of 0.0031 over 20000 rows.
    assert (rows["y"] == 1).mean() == pytest.approx(1 / (1 + np.exp(-1)), abs=0.0125)
    with pytest.raises(vbn.UsageError):
        m.simulate(10, seed=1, params={"q": 1.0}, quiet=True)
    with pytest.raises(vbn.UsageError):
        m.simulate(0, seed=1, quiet=True)


def test_vb_matches_vbn_vb(root, vbn_binary, wells):
    model, frame = wells
    q = model.vb(frame, seed=1, quiet=True)
    cli = subprocess.run([vbn_binary, "vb", root / "examples/wells/wells.vbn", "--data", root / "examples/wells/wells.csv",
                          "--seed", "1"], capture_output=True, text=True, check=True)
    table = {line.split()[0]: line.split() for line in cli.stdout.splitlines() if line.strip()}
    header = table["name"]
    for name in model.parameter_names:
        vals = dict(zip(header, table[name]))
        assert q.mean[name] == pytest.approx(float(vals["vb_mean"]), rel=1e-3)
        assert q.sd[name] == pytest.approx(float(vals["vb_sd"]), rel=1e-3)
    assert q.converged and q.covariance.shape == (3, 3)


def test_evidence_of_a_coin_matches_quadrature():
    m = vbn.Model.from_string(COIN, "coin")
    e = m.evidence({"y": [1] * 7 + [-1] * 3}, seed=2, quiet=True)
    b = np.linspace(-14, 14, 400001)
    integrand = np.exp(-b**2 / 8 - 7 * np.logaddexp(0, -b) - 3 * np.logaddexp(0, b)) / np.sqrt(8 * np.pi)
    exact = np.log(integrand.sum() * (b[1] - b[0]))
    assert abs(e["log_evidence"] - exact) < max(4 * e["se"], 1e-6)
    assert e["elbo"] <= exact + 1e-9


def test_predict_from_draws_and_from_the_variational_fit(wells):
    model, frame = wells
    fit = model.fit(frame, chains=2, draws=200, warmup=200, seed=4, quiet=True)
    rows = frame.head(10)
    p = model.predict(rows, fit, target="switched")
    assert list(p.columns) == ["row", "node", "p", "truth"]
    assert list(p["row"]) == list(range(1, 11)) and (p["node"] == "switched").all()
    assert ((p["p"] > 0) & (p["p"] < 1)).all()
    np.testing.assert_array_equal(p["truth"], np.where(rows["switched"] == 1, 1, -1))
    assert p.attrs["scores"]["scored"] == 10 and p.attrs["draws"] == 400
    # P(switched = +1 | x) averaged over draws is the mean of σ(a + b·x) by hand.
    d = fit.draws
    x = rows[["dist100", "arsenic"]].to_numpy()
    lin = d["a"].reshape(-1, 1) + d["b"].reshape(-1, 2) @ x.T
    np.testing.assert_allclose(p["p"], (1 / (1 + np.exp(-lin))).mean(axis=0), rtol=1e-9)
    q = model.vb(frame, seed=1, quiet=True)
    pq = model.predict(rows, q, target="switched", seed=1)
    np.testing.assert_allclose(pq["p"], p["p"], atol=0.02)
    missing = rows.assign(switched=np.nan)
    assert model.predict(missing, fit).attrs["scores"] is None
