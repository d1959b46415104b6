"""Validating documents against the conformance schemas fast: jsonschema-rs decides what
passes, and this module's compiler judges what jsonschema-rs refuses.

jsonschema (Python) takes about 3.5 ms per vector here, far too slow for filling and for the
adapter's check of every request. ``compile_schema`` builds two validators of a schema:
jsonschema-rs (draft 2020-12, compiled in Rust) and a compiler of the JSON Schema subset the
conformance schemas use into nested Python closures (``Compiler``; it accepts only the
keywords listed in COMPILERS and refuses a schema using any other, so it never silently skips
a rule). A document jsonschema-rs accepts is valid; one it refuses is judged again by the
compiled closures, whose verdict and problem texts are the ones every command prints.
jsonschema stays the authority (``vectors check``).

Why both. Measured under load (two cores shared with three other jobs' test runs; load
average 3.5 to 6), A and B interleaved in one process, medians and [spread]:

    per document (the 3,138 corpus vectors, 9 rounds):
      vector schema     closures 249 us [225 .. 370]   jsonschema-rs 15.5 us [9.3 .. 23.0]
      execute request   closures 125 us [104 .. 178]   jsonschema-rs 10.1 us [8.0 .. 18.3]
      (jsonschema, Python: 3,570 us [2,870 .. 3,680], 3 rounds over a fifth of the corpus)
    benchmarks/fill_benchmark.py's round, 5 rounds each:
      closures only 1,055 vectors/s [961 .. 1,297]   jsonschema-rs first 1,435 [1,262 .. 1,530]   1.36x
    benchmarks/conformance_benchmark.py's validate pass (2 adapter processes), 5 rounds each:
      closures only 2,532 vectors/s [1,737 .. 2,631], 720 us CPU/vector [705 .. 834]
      jsonschema-rs first 2,711 vectors/s [2,571 .. 3,297], 653 us CPU/vector [626 .. 660]   1.07x

jsonschema-rs alone is not the same validator, so it does not replace the closures: over the
corpus and 10,000 vectors with a random member changed, removed or added (values including
huge integers, integral floats, NaN, Infinity, duplicates, empty containers), jsonschema-rs
and the closures disagreed only where jsonschema-rs refuses and the closures and jsonschema
accept: NaN and Infinity (which Python's json reads, and jsonschema-rs turns into null), and
a hex string ending in a newline ("0xab\n": Python's ``$`` matches before a final newline,
ECMA-262's does not; since spec 11.2.1 names ECMA-262, the closures and jsonschema read the
patterns through spec/ecma.py and refuse it too). A key that is not valid UTF-8 (a lone surrogate) makes it raise; a
Python tuple it reads as an array (the closures want a list; the JSON text is the same). So
the only documents whose verdict the pair changes are Python-built ones holding a tuple
where an array goes, and every problem text is the closures' own.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from spec import ecma

Check = Callable[[Any, str, list], None]  # (value, path, problems) -> appends problems
ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description"}
TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _at(path: str) -> str:
    """A problem's location: the JSON pointer, or "(top)" for the document itself (as
    jsonschema's messages say)."""
    return path or "(top)"


def _same(a: Any, b: Any) -> bool:
    # JSON equality: booleans are not numbers.
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


class Compiler:
    def __init__(self, root: Mapping[str, Any]):
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Mapping[str, Any]) -> Check:
        unknown = set(schema) - ANNOTATIONS - set(COMPILERS)
        if unknown:
            raise ValueError(f"fastschema does not support {sorted(unknown)}")
        checks = [c for c in (COMPILERS[k](self, schema[k], schema) for k in schema if k in COMPILERS)
                  if c is not None]
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            first, second = checks

            def pair(value, path, problems):
                first(value, path, problems)
                second(value, path, problems)
            return pair

        def check(value, path, problems):
            for c in checks:
                c(value, path, problems)
        return check

    def ref(self, target: str) -> Check:
        if target not in self.refs:
            if not target.startswith("#/$defs/"):
                raise ValueError(f"fastschema supports only local $defs references, not {target}")
            holder: list[Check] = []
            self.refs[target] = lambda v, p, out: holder[0](v, p, out)
            holder.append(self.compile(self.root["$defs"][target[len("#/$defs/"):]]))
        return self.refs[target]


def _type(c: Compiler, spec, schema) -> Check:
    names = [spec] if isinstance(spec, str) else list(spec)
    tests = [TYPES[n] for n in names]
    exact = {"object": dict, "array": list, "string": str}
    if len(names) == 1 and names[0] in exact:  # the common case, without a call per test
        kind = exact[names[0]]

        def exactly(v, p, out):
            if not isinstance(v, kind):
                out.append(f"{_at(p)}: expected {names[0]}")
        return exactly

    def check(v, p, out):
        if not any(t(v) for t in tests):
            out.append(f"{_at(p)}: expected {' or '.join(names)}")
    return check


def _properties(c: Compiler, spec, schema) -> Check:
    subs = {k: c.compile(s) for k, s in spec.items()}

    def check(v, p, out):
        if isinstance(v, dict):
            for k, sub in subs.items():
                if k in v:
                    sub(v[k], f"{p}/{k}", out)
    return check


def _required(c: Compiler, spec, schema) -> Check:
    def check(v, p, out):
        if isinstance(v, dict):
            out.extend(f"{_at(p)}: missing {k!r}" for k in spec if k not in v)
    return check


def _additional(c: Compiler, spec, schema) -> Check:
    known = set(schema.get("properties", {}))
    sub = None if spec is False else c.compile(spec)

    def check(v, p, out):
        if isinstance(v, dict):
            for k in v:
                if k not in known:
                    if sub is None:
                        out.append(f"{_at(p)}: unknown member {k!r}")
                    else:
                        sub(v[k], f"{p}/{k}", out)
    return check


def _property_names(c: Compiler, spec, schema) -> Check:
    sub = c.compile(spec)

    def check(v, p, out):
        if isinstance(v, dict):
            for k in v:
                sub(k, f"{p}/{k} (name)", out)
    return check


def _items(c: Compiler, spec, schema) -> Check:
    sub = c.compile(spec)

    def check(v, p, out):
        if isinstance(v, list):
            for i, item in enumerate(v):
                sub(item, f"{p}/{i}", out)
    return check


def _pattern(c: Compiler, spec, schema) -> Check:
    regex = ecma.compile_pattern(spec)      # ECMA-262's meaning (spec 11.2.1), not re's

    def check(v, p, out):
        if isinstance(v, str) and regex.search(v) is None:
            out.append(f"{_at(p)}: {v[:40]!r} does not match {spec}")
    return check


def _enum(c: Compiler, spec, schema) -> Check:
    def check(v, p, out):
        if not any(_same(v, e) for e in spec):
            out.append(f"{_at(p)}: {v!r} is not one of {spec}")
    return check


def _const(c: Compiler, spec, schema) -> Check:
    def check(v, p, out):
        if not _same(v, spec):
            out.append(f"{_at(p)}: must be {spec!r}")
    return check


def _one_of(c: Compiler, spec, schema) -> Check:
    subs = [c.compile(s) for s in spec]

    def check(v, p, out):
        passing = sum(1 for s in subs if not _errors(s, v, p))
        if passing != 1:
            out.append(f"{_at(p)}: matches {passing} of the oneOf alternatives, not exactly 1")
    return check


def _any_of(c: Compiler, spec, schema) -> Check:
    subs = [c.compile(s) for s in spec]

    def check(v, p, out):
        if all(_errors(s, v, p) for s in subs):
            out.append(f"{_at(p)}: matches none of the anyOf alternatives")
    return check


def _errors(check: Check, value, path) -> list:
    found: list = []
    check(value, path, found)
    return found


def _ref(c: Compiler, spec, schema) -> Check:
    return c.ref(spec)


def _bound(test: Callable[[Any, Any], bool], what: str, measure: Callable[[Any], Any] | None, kind):
    def compiler(c: Compiler, spec, schema) -> Check:
        def check(v, p, out):
            if kind(v) and not test(measure(v) if measure else v, spec):
                out.append(f"{_at(p)}: {what} {spec}")
        return check
    return compiler


def _unique(c: Compiler, spec, schema) -> Check | None:
    if not spec:
        return None

    def check(v, p, out):
        if isinstance(v, list):
            seen = [repr(x) for x in v]
            if len(set(seen)) != len(seen):
                out.append(f"{_at(p)}: items are not unique")
    return check


_numeric = TYPES["number"]
COMPILERS: dict[str, Callable[[Compiler, Any, Mapping[str, Any]], Check | None]] = {
    "type": _type, "properties": _properties, "required": _required,
    "additionalProperties": _additional, "propertyNames": _property_names, "items": _items,
    "pattern": _pattern, "enum": _enum, "const": _const, "oneOf": _one_of, "anyOf": _any_of,
    "$ref": _ref, "uniqueItems": _unique,
    "minimum": _bound(lambda v, s: v >= s, "must be at least", None, _numeric),
    "minItems": _bound(lambda v, s: v >= s, "must have at least items:", len, TYPES["array"]),
    "maxItems": _bound(lambda v, s: v <= s, "must have at most items:", len, TYPES["array"]),
    "minLength": _bound(lambda v, s: v >= s, "must be at least this long:", len, TYPES["string"]),
    "maxLength": _bound(lambda v, s: v <= s, "must be at most this long:", len, TYPES["string"]),
}


def compile_schema(schema: Mapping[str, Any], library: bool = True) -> Callable[[Any], list[str]]:
    """A function returning the problems of a document (empty when valid): jsonschema-rs's
    acceptance first (unless ``library`` is false), then the compiled closures' problems."""
    check = Compiler(schema).compile(schema)
    if not library:
        return lambda document: _errors(check, document, "")
    import jsonschema_rs
    accepts = jsonschema_rs.Draft202012Validator(dict(schema)).is_valid

    def problems(document: Any) -> list[str]:
        try:
            if accepts(document):
                return []
        except ValueError:     # a value it cannot read (a lone surrogate, a set): the closures judge
            pass
        return _errors(check, document, "")
    return problems
