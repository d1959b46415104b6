"""The clauses the checks of ``rtwo-vm conformance selftest`` check (spec 11.5).

A check is named by the text it prints (the first argument of ``checks.run`` or
``checks.judge`` in the self-test's modules, read from their syntax tree, so nothing runs; an
f-string's fields are shown as ``{…}``). A rule names the start of a check's text and the
clauses it checks; a check no rule names is listed by ``rtwo-vm spec coverage`` as unlinked.
"""

from __future__ import annotations

import ast
import functools
from importlib import resources

from spec.clauses import Link, ids

MODULES = ("selftest", "selftest_messages", "selftest_scenario")

# (the start of a check's text, the clauses it checks)
RULES: tuple[tuple[str, str], ...] = (
    ("handshake: answers hello", "11.5.3-hello-first 11.5.2-hello 11.5.2-hello-reply 11.5.1-lines "
                                 "11-per-version 1.7-per-version 7.3.1-version"),
    ("hello passes the protocol schema", "11.5.1-schemas 11.5.2-hello-reply"),
    ("executes {…} sample vectors", "11.5.4-result 11.5.2-execute 11.5.2-result 11.5.1-schemas "
                                    "11.5.4-unsupported-input"),
    ("answers 40 pipelined requests", "11.5.1-order 11.5.1-lines"),
    ("answers a line that is not JSON", "11.5.4-bad-message 11.5.4-go-on 11.5.2-error"),
    ("answers a line nested 100,000 levels deep", "11.5.1-bounds 11.5.4-bad-message 11.5.4-go-on"),
    ("answers an unknown message type", "11.5.4-unknown-type 11.5.4-other-requests 11.5.2-error 11.5.4-go-on"),
    ("answers an execute without input", "11.5.4-well-formed 11.5.4-bad-message 11.5.2-execute"),
    ("answers a line nested {…} levels deep as usual", "11.5.1-bounds"),
    ("answers an execute before the hello", "11.5.3-before-hello"),
    ("answers {…} execute requests that do not have the schema's form",
     "11.5.4-well-formed 11.5.4-bad-message 11.2.1-word 11.2.1-counts "
     "11.2.3-members 11.2.3-explicit 11.2.3-accepted 7.3.2-json-integers"),
    ("answers an unknown trace_format", "11.5.5-trace-format 11.5.4-well-formed"),
    ("answers {…} execute requests outside the schema's form",
     "11.5.4-well-formed 11.2.1-patterns 11.5.2-execute 11.2.1-word 11.2.1-bytes"),
    ("answers a request without a string type", "11.5.4-other-requests 11.5.4-bad-message 11.5.4-go-on"),
    ("refuses {…} with an error BAD_MESSAGE and exits", "11.5.4-other-requests 11.5.4-refused-handshake"),
    ("reads a compute limit written 1000000000000.00000001", "7.3.2-json-integers"),
    ("capability trace: step traces equal", "11.5.5-native 11.5.5-encoding"),
    ("capability trace_eip3155", "11.5.5-eip3155-steps 11.5.5-eip3155-summary 11.5.5-encoding"),
    ("without capability trace_eip3155", "11.5.5-trace-format 11.5.4-unsupported-input"),
    ("capability scenario: answers {…} with a scenario_result", "11.9.4-messages 11.9.4-every-step 11.9.3-passing"),
    ("capability scenario: answers malformed scenario requests", "11.9.4-every-step 11.9.1-members 11.9.1-versions"),
    ("shutdown: answers bye", "11.5.6-exit 11.5.2-shutdown 11.5.2-bye"),
    ("end of input: exits with status 0", "11.5.6-exit"),
    ("unknown protocol version", "11.5.3-hello-first 11.5.4-refused-handshake"),
    ("unknown spec version", "11.5.3-hello-first 11.5.4-refused-handshake 11.5.3-sessions"),
)


def _text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return None if left is None or right is None else left + right
    return None


@functools.cache
def checks() -> tuple[str, ...]:
    """The text of every check the self-test's modules declare, in source order."""
    out = []
    for name in MODULES:
        source = resources.files("conformance.run").joinpath(f"{name}.py").read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("run", "judge") and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "checks" and node.args):
                text = _text(node.args[0])
                if text is not None:
                    out.append(" ".join(text.split()))
    return tuple(out)


def links(version: str) -> list[Link]:
    """One link per rule that names a check (the self-test's checks are the same in every
    version; the clauses a link names that ``version`` lacks are left to the caller)."""
    found = checks()
    out = []
    for start, clauses in RULES:
        chosen = tuple(c for c in found if c.startswith(start))
        if chosen:
            out.append(Link("selftest", start, ids(clauses), chosen))
    return out


def unlinked() -> tuple[str, ...]:
    """The checks no rule names."""
    return tuple(c for c in checks() if not any(c.startswith(start) for start, _ in RULES))
