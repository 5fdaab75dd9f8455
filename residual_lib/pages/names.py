"""How the pages write the variants: ``attn_only`` as ``AttnOnly`` in prose, tables and figures,
``full`` as ``Full`` where it names the variant and not the English word, and a hyphen between
two variants as the minus of a difference. The code names stay in commands, keys and file
names (:data:`residual_lib.run.architecture.DISPLAY_NAMES`)."""

from __future__ import annotations

import re

from ..run.architecture import DISPLAY_NAMES


def prose_names(text: str) -> str:
    """:func:`display_name` applied to the prose of a Markdown or plain text, not to what it
    sets in backticks (commands and code keep the code names)."""
    parts = text.split("`")
    return "`".join(display_name(part) if i % 2 == 0 else part for i, part in enumerate(parts))


_VARIANT = r"(?:AttnOnly|FFNOnly|NoResidual)"
#: ``full`` where it names the variant, not the English word: a run (``cpu full seed 42``), a
#: difference or an order with another variant (``AttnOnly - full``, ``FFNOnly > full``), a list
#: of variants, a comparison (``full vs AttnOnly``, ``than full does``), a value (``full 1.922``)
#: and the possessive (``full's block 0``).
_FULL = [
    (re.compile(r"(?<=\S )full(?= seed \d)"), "Full"),
    (re.compile(rf"({_VARIANT} [-−>] |{_VARIANT}, |{_VARIANT} vs |ratio to )full\b"), r"\1Full"),
    (re.compile(rf"\bfull(?=,? (?:and )?{_VARIANT}| [-−>] (?:{_VARIANT}|floor)\b| vs | against |'s\b|’s\b| does\b)"),
     "Full"),
    (re.compile(r"\bfull(?= \(?[−+]?\d)"), "Full"),
]
#: A hyphen between two variants (or a variant and the floor) is a difference: a true minus.
_MINUS = re.compile(rf"({_VARIANT}|Full) - (?=(?:{_VARIANT}|Full|floor)\b)")


def display_name(text: str) -> str:
    """``text`` with each variant's code name written as the reader meets it: ``attn_only`` ->
    ``AttnOnly`` anywhere in it, ``full`` only as the whole text or where it names the variant
    (:data:`_FULL`): it is also an English word. A hyphen between two variants becomes a minus."""
    if text in DISPLAY_NAMES:
        return DISPLAY_NAMES[text]
    for code in ("attn_only", "ffn_only", "no_residual"):
        text = text.replace(code, DISPLAY_NAMES[code])
    for pattern, replacement in _FULL:
        text = pattern.sub(replacement, text)
    return _MINUS.sub(r"\1 − ", text)
