"""How the project writes numbers and lists in sentences, the same in every layer: a value in
scientific notation as one token (``4.5×10⁻⁷``), a p-value, a signed difference with a true
minus, a list as a sentence lists it, and a plural without "(s)". The book's tables
(:mod:`residual_lib.pages.tables`) format their cells with the same rules."""

from __future__ import annotations

import math

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def scientific(value: float, digits: int = 2) -> str:
    """``value`` as ``4.5×10⁻⁷``: one token with no space, so it never wraps mid-number."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa.replace('-', '−')}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def p_text(p: float) -> str:
    """A p-value as the book writes it: three decimals, or a power of ten below 0.001."""
    if math.isnan(p):
        return "—"
    return f"{p:.3f}" if p >= 0.001 else scientific(p)


def signed(x: float) -> str:
    """A difference with its sign, three decimals and a true minus; 0.000 when it rounds to zero."""
    return f"{'−' if x < 0 else '+'}{abs(x):.3f}" if round(abs(x), 3) else "0.000"


def listing(items) -> str:
    """``a, b and c``: items joined as a sentence lists them ("" for none)."""
    items = [str(i) for i in items]
    if not items:
        return ""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")


def in_words(n: int) -> str:
    """A count as prose writes it: "no" to "twelve" in words, larger ones in digits."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else f"{n:,}"


def plural(noun: str, count: int) -> str:
    """``noun`` as many times as ``count`` says: ``record`` for 1, ``records`` otherwise (no "(s)")."""
    return noun if count == 1 else noun + "s"
