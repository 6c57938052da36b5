"""Shared fixtures: the repository's examples and the vbn binary the package is compared with
(VBN_BINARY, else build/tools/vbn/vbn of this checkout)."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def vbn_binary():
    path = pathlib.Path(os.environ.get("VBN_BINARY", ROOT / "build" / "tools" / "vbn" / "vbn"))
    if not path.exists():
        pytest.fail(f"no vbn binary at {path}: build it, or set VBN_BINARY")
    return path


@pytest.fixture(scope="session")
def wells(root):
    import pandas as pd
    import vbn
    # round_trip: pandas' default float parser may differ from the exact value in the last bit.
    frame = pd.read_csv(root / "examples" / "wells" / "wells.csv", float_precision="round_trip")
    return vbn.Model.from_file(root / "examples" / "wells" / "wells.vbn"), frame
