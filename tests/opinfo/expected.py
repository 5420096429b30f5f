"""OpInfo samples that fail today, each with its cause (strict, as tests/zoo/test_public_zoo.py's list is).

Key: "<opinfo>/<dtype>/<sample index>" (samples.Sample.key; indices are stable for torch 2.13.0's OpInfo
samples, generated with seed 0), or "<opinfo>/<dtype>/*" for every sample of that OpInfo and dtype.
- A listed sample that fails is an expected failure (counted apart, not a pass).
- A listed sample that passes fails the sweep and the CI test (XPASS): remove its entry.
- A failing sample not listed fails them too.
Refusals are not failures and are not listed here: torch.export's (not Ember's concern) and exir's named ones
(the results list them by reason).
"""

EXPECTED_FAILURES = {
}


def expected(key: str):
    """The recorded cause of a sample's failure, or None."""
    if key in EXPECTED_FAILURES:
        return EXPECTED_FAILURES[key]
    wildcard = key.rsplit("/", 1)[0] + "/*"
    return EXPECTED_FAILURES.get(wildcard)
