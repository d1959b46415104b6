"""What a partial implementation should implement next (issue 23): computed from the
programs of the vectors, never from their tags alone.

Every vector needs a set of *elements*: the instructions of every contract's code (each
container parsed and its code section decoded with the reference's decoder; the
instructions of a code that does not decode are those before the faulty byte (with the
instruction whose immediate is cut short), and the
fault itself is the feature ``invalid code: <CODE>``), and its request features and policy
gates: ``policy external_call <value>``, ``policy time_access <value>``, ``policy randomness
<value>``, ``policy allowed_operations list`` (when the list is given), ``policy
forbidden_operations list`` (when not empty), ``sandbox isolation_level <level>`` and
``sandbox storage_access <value>``.

An element is *known* when a vector the implementation passed shows it working (issue 39): an
instruction when the reference's trace of a passed vector executed it (an instruction in
a program that was refused, or in code that never ran, is not shown to work), a request
feature or policy gate when a passed vector needs it. The traces are the reference's, run on
the vector's input (an adapter's own trace is optional), once per vector and run
(``executed``, cached in the caller's mapping). A vector that failed, unsupported inputs
included, is *blocked* by the elements it needs that are not known: its *missing* elements.
For each missing element:

- ``blocked``: how many failing vectors need it (each of them needs it before it can pass);
- ``alone``: how many failing vectors miss only it (they become runnable once it is
  implemented, all else unchanged).

Instructions are ranked by ``blocked``, then ``alone``, then opcode; ``runnable_after`` is
cumulative: how many failing vectors miss nothing but the instructions ranked up to and
including this one (implement them in this order and that many vectors can run). Request
features and policy gates are ranked apart, in the same way. A failing vector that misses
nothing is a wrong answer to look at first only when it was not answered UNSUPPORTED_INPUT;
unsupported vectors that miss nothing are counted as the element ``UNSUPPORTED_WITH_KNOWN``
(what they lack is not an instruction or feature of the list: the adapter's messages say
what), so the list is never empty while vectors are unsupported. The adapter's own
``UNSUPPORTED_INPUT`` messages are counted by text, hexadecimal values lower-cased and every
other number replaced by ``N`` (so ``opcode 0x30 at offset 12`` and ``… offset 40`` count as
one message).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Mapping

import spec
from conformance.run.outcomes import UNSUPPORTED, Outcome

SHOWN = 15                 # rows of each ranking in the text report
MESSAGES_KEPT = 50         # distinct unsupported messages in the reports
MESSAGE_CHARS = 200        # characters of one message kept
_POLICY_VALUES = ("external_call", "time_access", "randomness")


UNSUPPORTED_WITH_KNOWN = ("unsupported, though every instruction and feature it needs worked in a "
                          "passed vector (see the adapter's messages)")


class _Executed:
    """A tracer (reference_vm.execute.Tracer) keeping the mnemonics of the executed
    instructions, nested frames included."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def step(self, frame: Any, decoded: Any) -> None:
        self.names.add(decoded.instruction.mnemonic)


def executed(vector: Mapping[str, Any], version: str) -> frozenset[str]:
    """The mnemonics of the instructions the reference executes on ``vector``'s input under
    spec ``version`` (none for a result decided before execution)."""
    from conformance.corpus.vector import run_reference
    tracer = _Executed()
    try:
        run_reference(vector.get("input") or {}, version, tracer=tracer)
    except Exception:  # noqa: BLE001 - an input the reference refuses ran nothing more
        pass
    return frozenset(tracer.names)


def _order(version: str) -> dict[str, int]:
    """Mnemonic -> its place in ``version``'s instruction table."""
    return {i.mnemonic: n for n, i in enumerate(spec.load(version).instructions)}


def _instructions(code_hex: Any, version: str) -> tuple[set[str], set[str]]:
    """The mnemonics of a container's code section (under spec ``version``) and its faults as
    features."""
    from reference_vm.container import parse
    from reference_vm.decode import decode
    from reference_vm.errors import InvalidCode
    from reference_vm.rules import rules
    try:
        blob = bytes.fromhex(str(code_hex)[2:])
    except ValueError:
        return set(), {"invalid code: not hexadecimal"}
    try:
        parsed = parse(blob, rules(version))
    except InvalidCode as err:
        return set(), {f"invalid code: {err.code}"}
    code, table = parsed.code, rules(version).instruction_set(parsed.version)
    try:
        return {d.instruction.mnemonic for d in decode(code, table)}, set()
    except InvalidCode as err:
        # The instructions before the fault: decode the prefix that decodes.
        found: set[str] = set()
        pc = 0
        while pc < len(code) and code[pc] in table:
            ins = table[code[pc]]
            found.add(ins.mnemonic)     # a truncated immediate's instruction included
            pc += ins.size
        return found, {f"invalid code: {err.code}"}


def elements(vector: Mapping[str, Any], version: str) -> tuple[frozenset[str], frozenset[str]]:
    """(instructions, request features and policy gates) a vector of spec ``version`` needs."""
    vector_input = vector.get("input") or {}
    instructions: set[str] = set()
    features: set[str] = set()
    contracts = (vector_input.get("pre_state") or {}).get("contracts") or {}
    for contract in contracts.values() if isinstance(contracts, dict) else ():
        if isinstance(contract, dict):
            found, faults = _instructions(contract.get("code", ""), version)
            instructions |= found
            features |= faults
    policy = vector_input.get("policy") or {}
    for name in _POLICY_VALUES:
        if name in policy:
            features.add(f"policy {name} {policy[name]}")
    if policy.get("allowed_operations") is not None:
        features.add("policy allowed_operations list")
    if policy.get("forbidden_operations"):
        features.add("policy forbidden_operations list")
    sandbox = vector_input.get("sandbox") or {}
    for name in ("isolation_level", "storage_access"):
        if name in sandbox:
            features.add(f"sandbox {name} {sandbox[name]}")
    return frozenset(instructions), frozenset(features)


_HEX = re.compile(r"0[xX][0-9a-fA-F]+")
_NUMBER = re.compile(r"(?<![0-9A-Za-z_])[0-9]+(?![0-9A-Za-z_])")


def normalised(message: str) -> str:
    """An unsupported message with its hexadecimal values lower-cased and every other number
    replaced by N, on one line and at most MESSAGE_CHARS characters."""
    text = " ".join(str(message).split())[:MESSAGE_CHARS]
    parts = []
    last = 0
    for m in _HEX.finditer(text):
        parts.append(_NUMBER.sub("N", text[last:m.start()]))
        parts.append("0x" + m.group()[2:].lower())
        last = m.end()
    parts.append(_NUMBER.sub("N", text[last:]))
    return "".join(parts)


def unsupported_message(o: Outcome) -> str | None:
    """The adapter's message of an UNSUPPORTED_INPUT answer, None for any other outcome."""
    if o.kind != UNSUPPORTED or not isinstance(o.reply, dict):
        return None
    return str(o.reply.get("message", ""))


def _rank(blocked: Counter, alone: Counter, key) -> list[dict[str, Any]]:
    return [{"name": name, "blocked": blocked[name], "alone": alone[name]}
            for name in sorted(blocked, key=lambda n: (-blocked[n], -alone[n], key(n)))]


def triage(outcomes: Iterable[Outcome], vectors: Mapping[str, Mapping[str, Any]], version: str,
           cache: dict[str, frozenset[str]] | None = None) -> dict[str, Any]:
    """The "what to implement next" section of one implementation's run of spec ``version``
    (module docstring); ``cache``: vector id -> executed instructions, kept for the run."""
    cache = {} if cache is None else cache
    outcomes = list(outcomes)
    if not any(o.status in ("fail", "xfail") for o in outcomes):
        outcomes = []            # nothing to triage: no program decoded
    needs = {o.vector_id: elements(vectors[o.vector_id], version) for o in outcomes}
    order = _order(version)
    known: set[str] = set()
    for o in outcomes:
        if o.status in ("pass", "xpass"):
            if o.vector_id not in cache:
                cache[o.vector_id] = executed(vectors[o.vector_id], version)
            known |= cache[o.vector_id] | needs[o.vector_id][1]
    failing = [o for o in outcomes if o.status in ("fail", "xfail")]
    missing = {o.vector_id: (needs[o.vector_id][0] - known, needs[o.vector_id][1] - known) for o in failing}
    unsupported = {o.vector_id for o in failing if o.kind == UNSUPPORTED}
    for vid in unsupported:
        if not missing[vid][0] and not missing[vid][1]:
            missing[vid] = (frozenset(), frozenset({UNSUPPORTED_WITH_KNOWN}))
    blocked_i: Counter = Counter()
    blocked_f: Counter = Counter()
    alone: Counter = Counter()
    for needed, features in missing.values():
        blocked_i.update(needed)
        blocked_f.update(features)
        if len(needed) + len(features) == 1:
            alone.update(needed | features)
    instructions = _rank(blocked_i, alone, lambda n: order.get(n, len(order)))
    prefix: set[str] = set()
    waiting = sorted(((len(i), i) for i, f in missing.values() if i and not f), key=lambda x: x[0])
    for row in instructions:
        prefix.add(row["name"])
        row["runnable_after"] = sum(1 for _, need in waiting if need <= prefix)
    messages = Counter(normalised(m) for m in map(unsupported_message, failing) if m is not None)
    return {
        "definition": "an element is known when a passed vector shows it working: an instruction "
                      "when the reference executed it in a passed vector, a request feature or policy "
                      "gate when a passed vector needs it; blocked = failing vectors that need a missing element, alone = "
                      "failing vectors missing only it, runnable_after = failing vectors missing only "
                      "the instructions ranked so far",
        "failing": len(failing),
        "without_missing": sum(1 for i, f in missing.values() if not i and not f),     # never unsupported
        "known_instructions": sorted(known & set(order), key=order.__getitem__),
        "instructions": instructions,
        "features": _rank(blocked_f, alone, str),
        "unsupported_messages": [{"message": m, "count": n} for m, n in
                                 sorted(messages.items(), key=lambda mn: (-mn[1], mn[0]))[:MESSAGES_KEPT]],
        "unsupported_messages_left_out": max(0, len(messages) - MESSAGES_KEPT),
    }


def text_lines(section: Mapping[str, Any], shown: int = SHOWN) -> list[str]:
    """The section as text lines for the run summary (empty when nothing is missing)."""
    rows, features = section["instructions"], section["features"]
    if not rows and not features and not section["unsupported_messages"]:
        return []
    lines = [f"   what to implement next (from the programs of the {section['failing']} failing vectors; known: "
             "instructions the reference executed in a passed vector; "
             "blocked = failing vectors that need it, alone = vectors it alone blocks, "
             "runnable = failing vectors runnable once it and those above are implemented):"]
    if rows:
        lines.append(f"     {'instruction':<16} {'blocked':>7} {'alone':>6} {'runnable':>8}")
        lines += [f"     {r['name']:<16} {r['blocked']:>7} {r['alone']:>6} {r['runnable_after']:>8}"
                  for r in rows[:shown]]
        if len(rows) > shown:
            lines.append(f"     … and {len(rows) - shown} more instructions")
    opaque = next((r for r in features if r["name"] == UNSUPPORTED_WITH_KNOWN), None)
    features = [r for r in features if r["name"] != UNSUPPORTED_WITH_KNOWN]
    if features:
        lines.append("     request features and policy gates not seen in a passed vector: " + ", ".join(
            f"{r['name']} {r['blocked']} (alone {r['alone']})" for r in features[:shown])
            + (f" … and {len(features) - shown} more" if len(features) > shown else ""))
    if opaque:
        lines.append(f"     {opaque['blocked']} vectors answered UNSUPPORTED_INPUT need only instructions and "
                     "features shown working in passed vectors: what they lack is in the adapter's messages")
    if section["without_missing"]:
        lines.append(f"     {section['without_missing']} failing vectors need nothing new (only instructions "
                     "and features shown working in passed vectors) and were not answered UNSUPPORTED_INPUT: "
                     "their answers are wrong, look at them first")
    messages = section["unsupported_messages"]
    if messages:
        lines.append("     the adapter's UNSUPPORTED_INPUT messages (numbers as N):")
        lines += [f"       {m['count']:>6}  {m['message']}" for m in messages[:shown]]
        left = len(messages) - min(shown, len(messages)) + section["unsupported_messages_left_out"]
        if left:
            lines.append(f"       … and {left} more messages")
    return lines


def html_rows(section: Mapping[str, Any], escape, shown: int = 40) -> str:
    """The section as HTML (``escape``: the report's escaping), empty when nothing is missing."""
    rows, features, messages = section["instructions"], section["features"], section["unsupported_messages"]
    if not rows and not features and not messages:
        return ""
    out = ["<h3>What to implement next</h3>",
           f"<p>From the programs of the {section['failing']} failing vectors (an instruction is known when "
           "the reference executed it in a passed vector): <i>blocked</i> = failing "
           "vectors that need it, <i>alone</i> = failing vectors it alone blocks, <i>runnable</i> = failing "
           "vectors runnable once it and the instructions above it are implemented.</p>"]
    if rows:
        out.append("<table><tr><th>instruction</th><th>blocked</th><th>alone</th><th>runnable</th></tr>")
        out += [f"<tr><td><code>{escape(r['name'])}</code></td><td>{r['blocked']}</td><td>{r['alone']}</td>"
                f"<td>{r['runnable_after']}</td></tr>" for r in rows[:shown]]
        out.append("</table>" + (f"<p>… and {len(rows) - shown} more instructions</p>" if len(rows) > shown else ""))
    if features:
        out.append("<table><tr><th>request feature or policy gate</th><th>blocked</th><th>alone</th></tr>")
        out += [f"<tr><td>{escape(r['name'])}</td><td>{r['blocked']}</td><td>{r['alone']}</td></tr>"
                for r in features[:shown]]
        out.append("</table>")
    if messages:
        out.append("<table><tr><th>UNSUPPORTED_INPUT message (numbers as N)</th><th>vectors</th></tr>")
        out += [f"<tr><td><code>{escape(m['message'])}</code></td><td>{m['count']}</td></tr>"
                for m in messages[:shown]]
        out.append("</table>")
    return "".join(out)
