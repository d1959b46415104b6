"""proofs/symbolic on the bundled examples: the paths found, their witnesses replayed on the
reference, the three demonstrations of the guide (token, counter, proxy through the call),
the verdicts (proved, bounded, counterexample, unknown, vacuous) and equivalence.

Expectations are derived by hand or from the spec's tables (costs from spec.load(V)), never
from what the executor printed: the counter's new-slot path costs its instructions' base
costs plus the new-slot cost and one page; the only wrap of `n + 1` is at n = 2^64 - 1; a
transfer breaks the sum of two balances exactly when the recipient's balance overflows; LTU
and LTS differ exactly when the operands' sign bits differ.
"""

from __future__ import annotations

from pathlib import Path

import z3

import spec
from proofs.symbolic import Setup, explore
from proofs.symbolic.equivalence import compare
from proofs.symbolic.properties import Property
from proofs.symbolic.userfile import load_file
from proofs.symbolic.verdicts import check, exit_code
from proofs.symbolic.witness import replay
from reference_vm import Limits, assemble
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TABLE = spec.load(V)
MASK = (1 << 64) - 1


def code(name: str) -> bytes:
    return assemble((EXAMPLES / name).read_text(), V)


def base_cost(source: str) -> int:
    """The base costs of a straight-line program's instructions, from the spec table."""
    total = 0
    for line in source.splitlines():
        words = line.split(";")[0].split()
        if words and not words[0].endswith(":") and not words[0].startswith("."):
            name = words[0].upper()
            if name == "PUSH":   # the assembler picks PUSHn: every width costs the same
                costs = {TABLE.by_mnemonic[f"PUSH{n}"].cost for n in (1, 2, 4, 8)}
                assert len(costs) == 1
                total += costs.pop()
            else:
                total += TABLE.by_mnemonic[name].cost
    return total


def replays(x) -> list[str]:
    return [replay(x, end, x.solver).status for end in x.ends]


def props(name: str) -> dict[str, Property]:
    return {p.name: p for p in load_file(EXAMPLES / name)}


def test_counter_has_two_paths_whose_costs_are_the_spec_tables_and_replay_on_the_reference():
    x = explore(Setup(0x100, {0x100: code("counter.rasm")}, version=V))
    schedule = TABLE.schedule
    plain = base_cost((EXAMPLES / "counter.rasm").read_text()) + schedule["memory"]["page_cost"]
    new = plain + schedule["storage"]["new_slot_cost"]
    computes = sorted(z3.simplify(e.usage["compute"]).as_long() for e in x.ends)
    # slot 0 was zero (a new slot: n + 1 = 1), or not (n + 1 written over it; at 2^64 - 1
    # that is a write of zero, the same branch of SSTORE's model)
    assert computes == [plain, new]
    assert {e.status for e in x.ends} == {"success"} and not x.cuts
    assert replays(x) == ["agrees"] * 2


def test_token_transfer_overflows_the_recipient_and_conserves_when_balances_fit():
    x = explore(Setup(0x100, {0x100: code("token.rasm")}, max_calldata=16, version=V))
    assert replays(x) == ["agrees"] * len(x.ends)
    p = props("token_properties.py")
    v = check(x, p["transfer_conserves_the_two_balances"])
    assert v.verdict == "counterexample" and v.replay.status == "agrees"
    w = v.replay.witness
    data = w.call_data + bytes(16)
    to, amount = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
    balances = w.storage.get(0x100, {})
    sender_balance, to_balance = balances.get(w.caller, 0), balances.get(to, 0)
    # the transfer went through (enough balance), and the recipient's balance wrapped
    assert w.caller != to and sender_balance >= amount and to_balance + amount > MASK
    assert v.replay.actual["status"] == "success"
    assert check(x, p["transfer_leaves_every_other_slot_unchanged"]).verdict == "proved"
    assert check(x, p["transfer_conserves_when_balances_fit"]).verdict == "proved"


def test_counter_grows_by_one_or_changes_nothing_and_wraps_only_at_the_top():
    p = props("counter_properties.py")
    for limits in (Limits(), Limits(compute=500)):     # 500: a new slot runs out of compute
        x = explore(Setup(0x100, {0x100: code("counter.rasm")}, limits=limits, version=V))
        assert check(x, p["counter_grows_by_one_or_changes_nothing"]).verdict == "proved"
        assert check(x, p["counter_output_is_the_new_count"]).verdict == "proved"
        v = check(x, p["counter_grows_by_one_as_an_integer"])
        assert v.verdict == "counterexample"
        assert v.replay.witness.storage[0x100][0] == MASK
        assert v.replay.actual["state_changes"] == [
            {"address": "0x100", "key": "0x0", "before": hex(MASK), "after": "0x0"}]
    exhausted = [e for e in x.ends if e.error == "COMPUTE_LIMIT_EXCEEDED"]
    # PUSH1 SLOAD PUSH1 ADD PUSH1 DUP2 SSTORE: the SSTORE is at 2+1+2+1+2+1 = 9
    assert len(exhausted) == 1 and exhausted[0].error_pc == 9
    assert replay(x, exhausted[0], x.solver).actual["state_changes"] == []


def test_proxy_through_the_call_the_counter_grows_by_one_or_changes_nothing():
    p = props("proxy_properties.py")
    # as examples/scenarios.toml deploys them: the counter at 0x101, the reverter at 0x102
    codes = {0x100: code("proxy.rasm"), 0x101: code("counter.rasm"),
             0x102: code("reverter.rasm")}
    for compute in (None, 600):     # 600: the counter's new-slot path fails inside the call
        limits = Limits() if compute is None else Limits(compute=compute)
        x = explore(Setup(0x100, codes, limits=limits, version=V))
        assert replays(x) == ["agrees"] * len(x.ends) and not x.not_explored
        for name in p:
            assert check(x, p[name]).verdict == "proved", name
    failed = [e for e in x.ends if e.records and e.records[0].error == "COMPUTE_LIMIT_EXCEEDED"]
    assert failed and all(e.status == "success" for e in failed)
    # at 600 units each callee's new slot runs out of compute (its slot zero) or not: the
    # reverter then reverts (its write undone), and the proxy succeeds in every case
    assert {tuple((r.status, r.error) for r in e.records) for e in x.ends} == {
        (a, b) for a in (("exhausted", "COMPUTE_LIMIT_EXCEEDED"), ("success", None))
        for b in (("exhausted", "COMPUTE_LIMIT_EXCEEDED"), ("reverted", None))}


def test_a_call_to_an_address_without_code_given_is_named_in_every_verdict():
    p = props("proxy_properties.py")
    del_102 = {0x100: code("proxy.rasm"), 0x101: code("counter.rasm")}
    x = explore(Setup(0x100, del_102, version=V))
    # 0x102 is not deployed: the second call's record says so, as the interpreter's does,
    # and the run says it assumed no code there
    assert {(r.status, r.error) for e in x.ends for r in e.records[1:]} == {
        ("rejected", "CONTRACT_NOT_FOUND")}
    assert x.not_explored == ["callee 0x102 not given (assumed to have no code)"]
    for name in p:
        v = check(x, p[name])
        assert v.verdict == "bounded" and v.bounds == x.not_explored, name
        assert exit_code([v]) == 4


def test_a_loop_on_symbolic_call_data_is_bounded_and_a_concrete_one_is_not():
    loop = assemble((ROOT / "benchmarks" / "loop.rasm").read_text(), V)
    x = explore(Setup(0x100, {0x100: loop}, max_calldata=8, loop_bound=2, version=V))
    assert [c.bound for c in x.cuts] and all(c.bound.startswith("loop bound 2 at pc")
                                             for c in x.cuts)
    assert len(x.ends) == 2   # N <= 1 and N = 2 return; N >= 3 forks a third time: cut
    from proofs.symbolic.properties import NO_FAILURE
    v = check(x, NO_FAILURE)
    assert v.verdict == "bounded" and "loop bound 2" in v.detail and exit_code([v]) == 4
    x = explore(Setup(0x100, {0x100: loop}, call_data=(7).to_bytes(8, "little"), loop_bound=1, version=V))
    assert not x.cuts and len(x.ends) == 1 and replays(x) == ["agrees"]
    assert check(x, NO_FAILURE).verdict == "proved"


def test_max_paths_stops_the_exploration_and_names_the_bound():
    from proofs.symbolic.properties import NO_FAILURE
    x = explore(Setup(0x100, {0x100: code("counter.rasm")}, max_paths=1, version=V))
    assert len(x.ends) == 1 and x.bounds_hit == ["max-paths 1"]
    assert check(x, NO_FAILURE).verdict == "bounded"


def test_contradictory_pre_conditions_are_vacuous_and_a_spent_budget_is_unknown():
    x = explore(Setup(0x100, {0x100: code("counter.rasm")}, version=V))
    never = Property("never", lambda c: [z3.BoolVal(False)],
                     assume=lambda c: [c.pre.storage[0] == 1, c.pre.storage[0] == 2])
    v = check(x, never)
    assert v.verdict == "vacuous" and exit_code([v]) == 1
    p = props("counter_properties.py")["counter_grows_by_one_or_changes_nothing"]
    tiny = explore(Setup(0x100, {0x100: code("counter.rasm")}, rlimit=1, version=V))
    v = check(tiny, p)
    assert v.verdict == "unknown" and v.undecided and exit_code([v]) == 4


def test_a_pre_condition_that_reads_the_result_is_an_error_not_a_verdict():
    x = explore(Setup(0x100, {0x100: code("counter.rasm")}, version=V))
    bad = Property("bad", lambda c: [z3.BoolVal(True)], assume=lambda c: [c.success])
    v = check(x, bad)
    assert v.verdict == "error" and "pre-condition" in v.detail and exit_code([v]) == 3


def test_entry_code_the_policy_refuses_is_one_path_with_its_refusal():
    from reference_vm import Policy
    x = explore(Setup(0x100, {0x100: code("counter.rasm")},
                      policy=Policy(forbidden_operations=("arithmetic",)), version=V))
    assert [(e.status, e.error) for e in x.ends] == [("violation", "INSTRUCTION_FORBIDDEN")]
    assert replays(x) == ["agrees"]


def test_hashing_output_is_sha256_of_the_witness_call_data():
    import hashlib
    x = explore(Setup(0x100, {0x100: code("hashing.rasm")}, max_calldata=8, version=V))
    for end in x.ends:
        r = replay(x, end, x.solver)
        assert r.status == "agrees"
        assert r.actual["output"] == "0x" + hashlib.sha256(r.witness.call_data).hexdigest()


def test_equivalence_proves_the_optimised_max_and_refutes_the_unsigned_one():
    behaviour = ("status", "output", "storage", "events")
    setup = lambda name: Setup(0x100, {0x100: code(name)}, version=V)  # noqa: E731
    same = compare(setup("max.rasm"), setup("max-optimised.rasm"), behaviour)
    assert same.verdict == "equivalent" and not same.bounds and not same.undecided
    whole = compare(setup("max.rasm"), setup("max-optimised.rasm"))
    assert whole.verdict == "different" and set(whole.differing) <= {"usage", "fee"}
    wrong = compare(setup("max.rasm"), setup("max-unsigned.rasm"), behaviour)
    assert wrong.verdict == "different" and wrong.differing == ["output"]
    data = wrong.witness.call_data + bytes(16)
    a, b = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
    assert (a >> 63) != (b >> 63)      # signed and unsigned order disagree only here
    signed = lambda v: v - (1 << 64) if v >> 63 else v  # noqa: E731
    assert wrong.results[0]["output"] == "0x" + max(a, b, key=signed).to_bytes(8, "little").hex()
    assert wrong.results[1]["output"] == "0x" + max(a, b).to_bytes(8, "little").hex()


MANY_WRITES = """
    push 0
again:
    dup1
    dup1
    mstore              ; memory[i, i + 8) = i
    push 8
    add
    dup1
    push 800
    ltu
    jumpi again         ; 100 writes: memory is made one array again every 48 writes
    pop
    push 0
    calldataload
    push 0xff
    and
    mload               ; a word at a symbolic offset below 256
    push 0
    swap1
    mstore              ; memory[0, 8) = that word
    push 0
    push 800
    return
"""


def test_memory_after_many_writes_reads_the_bytes_written():
    x = explore(Setup(0x100, {0x100: assemble(MANY_WRITES, V)}, max_calldata=1, version=V))
    assert not x.cuts and [e.status for e in x.ends] == ["success"]
    r = replay(x, x.ends[0], x.solver)
    assert r.status == "agrees"
    out = bytes.fromhex(r.actual["output"][2:])
    assert len(out) == 800 and all(int.from_bytes(out[i:i + 8], "little") == i
                                   for i in range(8, 800, 8))
    written = b"".join(i.to_bytes(8, "little") for i in range(0, 800, 8))
    offset = (r.witness.call_data + bytes(1))[0]
    assert out[:8] == written[offset:offset + 8]
