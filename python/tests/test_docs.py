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
