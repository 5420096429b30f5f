"""The generated backend table: exactly the backends a selection names, sorted, none without `backends:`."""

import pytest

from codegen.gen_registration import BackendDecl, ManifestError, _render_backends, parse_backend, select_backends

PORTABLE = BackendDecl(
    "EmberPortable", "ember::ember_portable::kBackend", "backends/ember_portable/runtime/ember_portable.h"
)
OTHER = BackendDecl("Acme", "acme::kBackend", "acme/backend.h")


def test_selection_picks_exactly_the_named_backends_sorted():
    assert select_backends([PORTABLE, OTHER], ["EmberPortable"]) == [PORTABLE]
    assert select_backends([PORTABLE, OTHER], []) == []
    assert select_backends([PORTABLE, OTHER], None) == [OTHER, PORTABLE]  # no selection: all, by id
    table = "\n".join(_render_backends([OTHER, PORTABLE]))
    assert "kBackends[2] = {&acme::kBackend, &ember::ember_portable::kBackend}" in table


def test_a_table_without_backends_references_none():
    table = "\n".join(_render_backends([]))
    assert "kBackends" not in table and "&kNoDelegates" in table


def test_a_backend_the_build_lacks_is_named():
    with pytest.raises(ManifestError, match="delegate backends this build does not offer: XnnpackBackend"):
        select_backends([PORTABLE], ["XnnpackBackend"])


def test_backend_spec_is_checked():
    assert parse_backend("A@ns::k@a/b.h") == BackendDecl("A", "ns::k", "a/b.h")
    with pytest.raises(ManifestError, match="expected ID@C\\+\\+SYMBOL@HEADER"):
        parse_backend("A@ns::k")
