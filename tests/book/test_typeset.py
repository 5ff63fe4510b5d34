"""Tests of ``stumplib.book.typeset``: the book's symbols and plain numbers."""
import pytest

from stumplib.book.typeset import typeset


@pytest.mark.parametrize("ascii_, book", [
    ("alpha_l >= alpha_c", "αₗ ≥ αc"),
    ("d -> infinity", "d → ∞"),
    ("a m∧n^-1 rate", "a (m∧n)⁻¹ rate"),  # the exponent binds to the meet, not to n
    ("(m∧n)^-1", "(m∧n)⁻¹"),
    ("MSE x N^2", "MSE × N²"),
    ("m x n = 128x512", "m × n = 128×512"),
    ("beta* = 1e+04", "β* = 10⁴"),
    ("1.281e+06 and 2.5e-03", "1.281 × 10⁶ and 2.5 × 10⁻³"),
    ("target 1e-03.", "target 10⁻³."),  # a number that ends the sentence
    ("dF_m/dm, dF_theta/dtheta, tau_hi", "dFₘ/dm, dFθ/dθ, τₕᵢ"),
    ("alphabet, betas, x_i", "alphabet, betas, xᵢ"),  # words that merely start like a symbol
])
def test_typeset_writes_the_books_symbols(ascii_, book):
    assert typeset(ascii_) == book
    assert typeset(book) == book  # idempotent

