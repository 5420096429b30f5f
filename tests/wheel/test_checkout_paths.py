"""In a repository checkout the wheel's lookups fall back to the checkout: ember._tools says it is not installed and
finds the tools in bazel-bin, schema.resources finds the data at the repository root, ember.__version__ is VERSION,
and ember.llm_export is examples/llm's files (docs/wheel.md)."""

import os

import pytest

from tests.conftest import ROOT


def test_version_is_the_version_file():
    import ember

    with open(os.path.join(ROOT, "VERSION")) as f:
        assert ember.__version__ == f.read().strip()


def test_tools_and_data_come_from_the_checkout():
    from ember import _tools
    from schema import resources

    assert not _tools.installed() and not resources.installed()
    assert os.path.realpath(_tools.REPO_ROOT) == os.path.realpath(ROOT)
    assert resources.repo_path("kernels", "portable", "kernels.yaml") == os.path.join(
        ROOT, "kernels", "portable", "kernels.yaml"
    )
    assert resources.packaged_binary("flatc") is None
    with pytest.raises(ValueError, match="no Ember tool named 'nope'"):
        _tools.find_binary("nope")


def test_llm_export_is_examples_llm():
    from ember.llm_export import export, model

    assert os.path.realpath(export.__file__) == os.path.realpath(os.path.join(ROOT, "examples", "llm", "export.py"))
    assert export.Decoder is model.Decoder  # relative imports: one module set under this name
