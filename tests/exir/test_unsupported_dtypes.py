"""The emitter's last line of defence (to_edge refuses these earlier, see test_unsupported_features): a dtype the
.pte format cannot hold is an EmitError that names it and says what to do, never a bare ValueError."""

import pytest
import torch

from exir.emit.emitter import EmitError, scalar_type_of
from schema import program as S


@pytest.mark.parametrize(
    "dtype, message",
    [
        (torch.complex64, r"dtype torch.complex64 \(ScalarType ComplexFloat\) cannot be exported: .* no complex types"),
        (torch.complex128, r"ScalarType ComplexDouble\) cannot be exported"),
        (torch.bits8, r"dtype torch.bits8 \(ScalarType Bits8\) has no .pte scalar type"),
    ],
)
def test_dtype_without_pte_scalar_type_is_named(dtype, message):
    with pytest.raises(EmitError, match=message):
        scalar_type_of(dtype)


def test_pte_scalar_types_are_the_contracts():
    assert scalar_type_of(torch.float32) is S.ScalarType.FLOAT
    assert scalar_type_of(torch.uint16) == 27 and scalar_type_of(torch.bfloat16) == 15
