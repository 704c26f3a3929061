"""nbval runs each notebook cell as one test. A cell that trains a dozen small models takes a
minute on a 2-core laptop and more on a busy CI machine, so notebook cells get a longer
per-test limit than the unit tests' 120 s (pyproject.toml); a hung cell still fails."""
import pytest

CELL_TIMEOUT_S = 600


def pytest_collection_modifyitems(items):
    for item in items:
        if item.nodeid.endswith(".ipynb") or ".ipynb::" in item.nodeid:
            item.add_marker(pytest.mark.timeout(CELL_TIMEOUT_S))
