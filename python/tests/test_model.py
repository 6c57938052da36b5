"""Models and their errors: the located message of the command line, and its parts."""

import subprocess

import pandas as pd
import pytest
import vbn

BAD = "node y ~ logistic(w * x);  w ~ normal(0, 1);"


def test_model_from_file_and_string(root):
    m = vbn.Model.from_file(root / "examples" / "paper" / "sbn_3x8.vbn")
    assert m.dimension == 32
    assert m.parameter_names[:2] == ["b[1]", "b[2]"]
    assert "W[8,3]" in m.parameter_names
    assert m.parameter_shapes == {"b": (8,), "W": (8, 3)}
    assert m.binary_columns == [f"v[{k}]" for k in range(1, 9)]
    assert m.covariate_columns == []
    s = vbn.Model.from_string("node y ~ logistic(b);  b ~ normal(0, 2);", "coin")
    assert s.name == "coin" and s.parameter_names == ["b"]
    assert "y" in s.describe()


def test_model_error_carries_the_cli_message_and_its_parts(tmp_path, vbn_binary):
    path = tmp_path / "bad.vbn"
    path.write_text(BAD + "\n")
    with pytest.raises(vbn.ModelError) as info:
        vbn.Model.from_file(path)
    e = info.value
    assert (e.file, e.line, e.column) == (str(path), 1, 23)
    assert e.message == "unknown parent 'x'; declared nodes and covariates are y"
    cli = subprocess.run([vbn_binary, "check", path], capture_output=True, text=True)
    assert cli.returncode == 1
    assert str(e).strip() in cli.stderr  # the same lines, quote and caret
    assert str(e).splitlines()[2].endswith("^")


def test_model_error_from_string_is_named_and_is_an_error():
    with pytest.raises(vbn.Error) as info:
        vbn.Model.from_string("node y ~ logistic(2 + 3 * q);", "m")
    e = info.value
    assert isinstance(e, vbn.ModelError)
    assert (e.file, e.line, e.column) == ("m", 1, 27)
    assert e.message.startswith("unknown parent 'q'")


def test_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(vbn.IoError) as info:
        vbn.Model.from_file(tmp_path / "none.vbn")
    assert "none.vbn" in str(info.value)
    assert info.value.line is None


def test_compiler_warnings_are_model_warnings():
    text = "node h hidden ~ bernoulli(0.5);  node y ~ logistic(b);  b ~ normal(0, 1);"
    with pytest.warns(vbn.ModelWarning, match="hidden node 'h' has no children"):
        m = vbn.Model.from_string(text, "w")
    assert m.warnings.startswith("w:1:")


def test_declared_parameters_keep_their_shapes_and_draws_come_out_shaped(root):
    """`param c; param v;` in examples/tied: one weight each, read by all four visits."""
    m = vbn.Model.from_file(root / "examples" / "tied" / "occupancy.vbn")
    assert m.dimension == 5
    assert m.parameter_shapes == {"a": (), "u": (2,), "c": (), "v": ()}
    assert "tied with y[2], y[3], y[4]" in m.describe()
    frame = pd.read_csv(root / "examples" / "tied" / "occupancy.csv")
    fit = m.fit(frame, chains=2, draws=100, warmup=100, seed=3, threads=1, quiet=True)
    assert fit.draws["v"].shape == (2, 100)
    assert fit.draws["u"].shape == (2, 100, 2)


def test_learned_scale_is_a_parameter_reported_as_itself(root):
    """`b ~ normal(0, tau); tau ~ half_normal(1);` in examples/multilevel: tau has its own
    draws, positive (the sampler's log tau turned back into tau)."""
    m = vbn.Model.from_file(root / "examples" / "multilevel" / "items.vbn")
    assert m.dimension == 14
    assert m.parameter_shapes["tau"] == ()
    assert "learned scale" in m.describe()
    frame = pd.read_csv(root / "examples" / "multilevel" / "items.csv")
    fit = m.fit(frame, chains=2, draws=200, warmup=200, seed=3, threads=1, quiet=True)
    tau = fit.draws["tau"]
    assert tau.shape == (2, 200)
    assert (tau > 0).all()
    # The data were simulated with twelve intercepts of sd 1.0: tau's posterior sits near it.
    assert 0.6 < tau.mean() < 1.6
