"""The regular-expression dialect of the spec's schemas (chapter 11.2.1): ECMA-262, as JSON
Schema 2020-12 defines ``pattern``.

Python's ``re`` differs where it matters for the schemas: ``$`` also matches before a final
newline, so ``re.search("^0x[0-9a-f]+$", "0x100\\n")`` matches and a word followed by a
newline would pass. :func:`compile_pattern` translates a schema pattern into a Python regex
of the ECMA-262 meaning for the constructs the schemas use (anchors, classes, groups,
quantifiers): an unescaped ``$`` outside a class becomes ``\\Z`` (the very end), and ``\\d``,
``\\w`` and ``\\s`` keep to ASCII as in ECMA-262 without the ``u`` flag (``\\s`` there also
holds a few Unicode spaces, which no schema pattern uses). :func:`validator` builds a
jsonschema Draft 2020-12 validator whose ``pattern`` keyword uses it; every reader of the
schemas goes through these two.
"""

from __future__ import annotations

import functools
import re
from typing import Any


def translate(pattern: str) -> str:
    """``pattern`` with every unescaped ``$`` outside a character class replaced by ``\\Z``."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":      # a ']' first in a class is a member
                out.append("[]")
                i += 2
                continue
        elif c == "$":
            c = r"\Z"
        out.append(c)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """The compiled Python regex with the ECMA-262 meaning of a schema ``pattern`` (matched
    with ``search``, as JSON Schema's ``pattern`` is)."""
    return re.compile(translate(pattern), re.ASCII)


def _pattern_keyword(validator, pattern: str, instance: Any, schema: Any):
    from jsonschema.exceptions import ValidationError
    if validator.is_type(instance, "string") and not compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator_class():
    import jsonschema
    return jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                        {"pattern": _pattern_keyword})


def validator(schema: Any, **kwargs: Any):
    """A jsonschema Draft 2020-12 validator of ``schema`` with ECMA-262 patterns."""
    return _validator_class()(schema, **kwargs)
