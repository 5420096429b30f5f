"""The public model zoo (zoo/public): torchvision, timm and Hugging Face models, at CI sizes, exported with
exir and run on the default and the portable-only runtime, each matching eager PyTorch.

A model that does not pass yet is an expected failure (strict): EXPECTED_FAILURES records why it fails today.
- When it starts passing, the test fails as XPASS(strict): remove its entry.
- While it fails for the recorded reason, or a part of it (some of its missing operators gained kernels), it
  xfails.
- When it fails for any other reason, the test fails, naming the new cause.
`python -m zoo.public.status` prints the same causes for every model.
"""

import pytest

from zoo.public.check import check
from zoo.public.models import MODELS

# model -> the causes it fails with today (Result.causes(): "no kernel: <op>", "not core ATen: <op>", or the error).
# Empty since exir gives every out a dim order its inputs really have (a permute is materialized contiguous,
# so eager's permuted strides no longer leak into the outs after it): all 28 pass at CI sizes.
EXPECTED_FAILURES = {}


class RecordedFailure(Exception):
    """The model failed for (part of) the reason EXPECTED_FAILURES records."""


def _param(name):
    if name not in EXPECTED_FAILURES:
        return name
    return pytest.param(
        name, marks=pytest.mark.xfail(strict=True, raises=RecordedFailure, reason="; ".join(EXPECTED_FAILURES[name]))
    )


@pytest.mark.parametrize("name", [_param(n) for n in MODELS])
def test_public_model_matches_eager_on_both_builds(runtime, name):
    r = check(MODELS[name], "ci", runtime)
    if r.ok:
        return
    recorded = EXPECTED_FAILURES.get(name)
    if recorded is not None and set(r.causes()) <= set(recorded):
        raise RecordedFailure("; ".join(r.causes()))
    assert r.ok, f"{name} ({r.source}) failed at {r.stage}: {r.cause}" + (
        f"\n(EXPECTED_FAILURES records: {recorded})" if recorded else ""
    )
