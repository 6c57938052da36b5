"""The Python examples of docs/python.md and README.md run as written, from the repository's
root, each file's blocks in order in one namespace."""

import os
import re

import pytest

BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("doc", ["docs/python.md", "README.md"])
def test_python_examples_run(root, doc, monkeypatch):
    text = (root / doc).read_text()
    blocks = BLOCK.findall(text)
    assert blocks, f"{doc} has no python examples"
    monkeypatch.chdir(root)
    namespace = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{doc} (python block {i + 1})", "exec"), namespace)


def test_the_design_documents_the_inference_data_the_package_writes(root):
    """docs/design.md §4's InferenceData table names the groups in the order a fit writes them
    and every sample_stats variable with the CSV column it comes from."""
    import vbn
    from vbn._results import STATS_EVERY_METHOD, STATS_NUTS
    text = (root / "docs/design.md").read_text()
    section = text.split("### InferenceData (netCDF4)\n", 1)[1].split("\n## ", 1)[0]
    rows = {m[1]: m[2] for m in re.finditer(r"^\| `(\w+)` \| (.*)$", section, re.M)}
    m = vbn.Model.from_string("node x ~ bernoulli(0.5);  node y ~ logistic(b + w * [x]);  b, w ~ normal(0, 1);", "xy")
    fit = m.fit({"x": [1, -1, 1, 1], "y": [1, 1, -1, 1]}, chains=1, draws=10, warmup=10, seed=1, log_lik=True,
                quiet=True)
    assert list(rows) == list(fit.to_inference_data())
    for column, name in {**STATS_EVERY_METHOD, **STATS_NUTS}.items():
        assert f"`{name}` (`{column}`" in rows["sample_stats"], name
