"""Author expectations of single-call definitions (conformance/corpus/expect.py, issue 37 part
2): a definition states what its result must be, the fill checks it, and a definition whose
expectation contradicts the reference does not fill (``vectors fill`` and ``--check`` stop with
one line per problem). Every expected value here is computed by hand from the spec's text and
tables, never read from a fill. Fills run on a few cases, not the corpus."""

from __future__ import annotations

import hashlib
import math
import re

import pytest

import spec
from conformance.corpus import fill as fill_mod
from conformance.corpus.expect import Expect, ExpectationFailed
from conformance.corpus.fill import DefinitionError, fill_checked
from conformance.corpus.vector import Case, fill_case

VERSIONS = spec.names()
TABLE = spec.load(VERSIONS[0])
COST = {m: TABLE.by_mnemonic[m].cost for m in ("PUSH1", "ADD", "SSTORE", "STOP")}
STORAGE = TABLE.schedule["storage"]
ADD = "push 1\npush 2\nadd\nstop\n"
ADD_COMPUTE = 2 * COST["PUSH1"] + COST["ADD"] + COST["STOP"]         # 5.2.3: base costs alone
SSTORE = "push 1\npush 7\nsstore\nstop\n"                               # slot 1 := 7, a new slot
SSTORE_COMPUTE = 2 * COST["PUSH1"] + COST["SSTORE"] + STORAGE["new_slot_cost"]


def _case(id: str, code: str, expect, **kw) -> Case:
    return Case(id=id, description=id, code=code, expect=expect, **kw)


def _fill(monkeypatch, *cases):
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter(cases))
    return fill_mod.fill(["definition"])


# Each contradicts the spec (and so the reference) in one way, in every version it fills for.
PLANTED = [
    # ok expected, but three base costs do not fit a compute limit of two
    (_case("arithmetic/ADD/planted_ok", ADD, Expect(outcome="success"), limits={"compute": ADD_COMPUTE - 1}),
     "arithmetic/ADD/planted_ok ({v}): expected success, the reference gives COMPUTE_LIMIT_EXCEEDED"),
    # the wrong slot value
    (_case("storage/SSTORE/planted_slot", SSTORE, Expect(storage={0x100: {1: 8}})),
     "storage/SSTORE/planted_slot ({v}): expected slot 0x1 of 0x100 = 0x8, the reference gives 0x7"),
    # a usage bound off by one
    (_case("storage/SSTORE/planted_bound", SSTORE, Expect(at_most={"compute": SSTORE_COMPUTE - 1})),
     f"storage/SSTORE/planted_bound ({{v}}): expected compute at most {SSTORE_COMPUTE - 1}, "
     f"the reference gives {SSTORE_COMPUTE}"),
    # storage units of a new slot, one short
    (_case("storage/SSTORE/planted_units", SSTORE,
           Expect(usage={"storage_units": STORAGE["write_units"] + STORAGE["new_slot_units"] - 1})),
     f"storage/SSTORE/planted_units ({{v}}): expected storage_units "
     f"{STORAGE['write_units'] + STORAGE['new_slot_units'] - 1}, the reference gives "
     f"{STORAGE['write_units'] + STORAGE['new_slot_units']}"),
]


def test_a_definition_whose_expectation_contradicts_the_reference_does_not_fill(monkeypatch):
    right = _case("arithmetic/ADD/right", ADD, Expect(outcome="success", output=b"", calls=(),
                                                       usage={"compute": ADD_COMPUTE, "memory_pages": 0}))
    with pytest.raises(ExpectationFailed) as caught:
        _fill(monkeypatch, right, *(case for case, _ in PLANTED))
    # every problem of every planted definition in every version, one line each; none of the right one
    assert list(caught.value.lines) == [line.format(v=v) for _, line in PLANTED for v in VERSIONS]
    assert str(caught.value).splitlines() == list(caught.value.lines)
    filled = _fill(monkeypatch, right)
    assert [len(c.vectors) for c in filled.corpora.values()] == [1] * len(VERSIONS)


def test_expectations_are_checked_not_written_into_the_vector():
    bare = Case(id="storage/SSTORE/t", description="t", code=SSTORE)
    units = STORAGE["write_units"] + STORAGE["new_slot_units"]
    stated = Case(id="storage/SSTORE/t", description="t", code=SSTORE, expect=Expect(
        outcome="success", storage={0x100: {1: 7, 2: 0}, 0x999: {0: 0}},
        usage={"compute": SSTORE_COMPUTE, "storage_writes": 1, "storage_new_slots": 1, "storage_units": units,
               "fee": SSTORE_COMPUTE * TABLE.schedule["fee"]["compute_price"]
               + units * TABLE.schedule["fee"]["storage_unit_price"]},
        at_least={"compute": SSTORE_COMPUTE}, at_most={"memory_pages": 0}))
    assert fill_checked(stated, VERSIONS) == fill_checked(bare, VERSIONS)


def test_an_undone_write_and_a_call_record_are_expected_by_slot_and_outcome():
    # 6.11: a callee that writes slot 1 and traps loses its write; its record has TRAP_EXECUTED
    code = "push 0x101\npush 100000\npush 0\npush 0\ncall\nstop\n"
    callee = "push 1\npush 2\nsstore\ntrap\n"
    right = Expect(outcome="success", calls=("TRAP_EXECUTED",), storage={0x101: {1: 0}})
    assert fill_case(_case("call/CALL/t", code, right, contracts={0x101: callee}), VERSIONS[0])
    kept = Expect(calls=("success",), storage={0x101: {1: 2}})
    with pytest.raises(ExpectationFailed) as caught:
        fill_case(_case("call/CALL/t", code, kept, contracts={0x101: callee}), VERSIONS[0])
    assert caught.value.lines == (
        f"call/CALL/t ({VERSIONS[0]}): expected call outcomes [success], the reference gives [TRAP_EXECUTED]",
        f"call/CALL/t ({VERSIONS[0]}): expected slot 0x1 of 0x101 = 0x2, the reference gives 0x0")


def _sha256_compute(version: str, length: int) -> int:
    """push 0; push 0; push length; sha256; push 0; push 32; return on fresh memory, 0 < length
    <= a page: five PUSH1, SHA256 and RETURN (5.2.3), one page grown by SHA256 and its
    hash_cost (5.6.5); RETURN's range is in that page."""
    table = spec.load(version)
    hashed = math.ceil(length / table.schedule["hash"]["block_size"]) * table.schedule["hash"]["block_cost"]
    return (5 * table.by_mnemonic["PUSH1"].cost + table.by_mnemonic["SHA256"].cost
            + table.by_mnemonic["RETURN"].cost + table.schedule["memory"]["page_cost"] + hashed)


def test_an_expectation_whose_answer_changes_with_the_version_is_given_per_version():
    code = "push 0\npush 0\npush 64\nsha256\npush 0\npush 32\nreturn\n"
    digest = hashlib.sha256(bytes(64)).digest()
    per_version = {v: Expect(output=digest, usage={"compute": _sha256_compute(v, 64)}) for v in VERSIONS}
    case = _case("hash/SHA256/t", code, per_version)
    assert len(fill_checked(case, VERSIONS)) == len(VERSIONS)
    # the block cost differs between the versions, so one version's figure is wrong in the other
    first, *later = VERSIONS
    assert later and all(_sha256_compute(v, 64) != _sha256_compute(first, 64) for v in later)
    blind = _case("hash/SHA256/t", code, per_version[first])
    with pytest.raises(ExpectationFailed) as caught:
        fill_checked(blind, VERSIONS)
    assert [line.split(":")[0] for line in caught.value.lines] == [f"hash/SHA256/t ({v})" for v in later]
    # a mapping holds from each version it names until the next: naming the first one only is
    # the same as the version-blind expectation
    with pytest.raises(ExpectationFailed):
        fill_checked(_case("hash/SHA256/t", code, {first: per_version[first]}), VERSIONS)


@pytest.mark.parametrize("expect,words", [
    (Expect(outcome="SUCCES"), "unknown outcome 'SUCCES' in the expectation"),
    (Expect(calls=("TRAPPED",)), "unknown call outcome 'TRAPPED'"),
    (Expect(usage={"gas": 1}), "unknown usage name 'gas' in usage"),
    (Expect(at_most={"compute": -1}), "at_most['compute'] must be a count"),
    (Expect(storage={0x100: {2 ** 64: 1}}), "not a word"),
    ({"0.9": Expect()}, "names 0.9, not a version the definition is filled for"),
    ("success", "expect must be an Expect or a mapping version -> Expect"),
])
def test_a_malformed_expectation_is_a_definition_error_before_anything_runs(expect, words):
    with pytest.raises(DefinitionError, match=r"^arithmetic/ADD/t: .*" + re.escape(words)):
        fill_checked(_case("arithmetic/ADD/t", ADD, expect), VERSIONS)


def test_an_outcome_code_of_a_later_version_is_unknown_in_an_earlier_one():
    later = [c for c in spec.load(VERSIONS[-1]).errors if c not in TABLE.errors]
    assert later, "the newest version adds an outcome code"
    with pytest.raises(DefinitionError, match=f"unknown outcome '{later[0]}' .*spec {VERSIONS[0]}:"):
        fill_checked(_case("arithmetic/ADD/t", ADD, Expect(outcome=later[0])), VERSIONS)
    # valid when the definition is filled only for versions that have the code
    case = _case("arithmetic/ADD/t", ADD, Expect(outcome=later[0]), since=VERSIONS[-1])
    with pytest.raises(ExpectationFailed, match=f"expected {later[0]}, the reference gives success"):
        fill_checked(case, VERSIONS)


def test_cli_fill_check_stops_with_one_line_per_problem(monkeypatch, capsys):
    from rtwo_vm import cli
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter([case for case, _ in PLANTED[:2]]))
    assert cli.main(["vectors", "fill", "--check", "--source", "definition"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    problems = [line.format(v=v) for _, line in PLANTED[:2] for v in VERSIONS]
    assert lines == [f"rtwo-vm: error: author expectations fail ({len(problems)} problems in 2 definitions); a "
                     "definition whose expectations fail does not fill:", *problems]


def test_a_scenario_step_states_the_same_expect_with_the_slots_after_that_step():
    from conformance.scenario.case import ScenarioCase, Step
    from conformance.scenario.fill import fill_case as fill_scenario
    kv = "push 0\ncalldataload\npush 8\ncalldataload\nsstore\nstop\n"      # storage[word0] = word1

    def call(key: int, value: int) -> bytes:
        return key.to_bytes(8, "little") + value.to_bytes(8, "little")

    def scenario(first: Expect) -> ScenarioCase:
        return ScenarioCase("scenario/t/kv", "kv", {0x100: kv}, (Step(call_data=call(3, 9), expect=first),
                                                                  Step(call_data=call(3, 0), expect="success")),
                            expect_storage={0x100: {3: 0}})
    new_slot = STORAGE["write_units"] + STORAGE["new_slot_units"]
    fill_scenario(scenario(Expect(outcome="success", storage={0x100: {3: 9}}, usage={"storage_units": new_slot})),
                  VERSIONS[0])
    with pytest.raises(ExpectationFailed) as caught:
        fill_scenario(scenario(Expect(storage={0x100: {3: 0}}, at_most={"storage_units": new_slot - 1})), VERSIONS[0])
    with pytest.raises(ValueError, match=r"^scenario/t/kv: step 0: unknown usage name 'gas'"):
        fill_scenario(scenario(Expect(usage={"gas": 1})), VERSIONS[0])
    assert caught.value.lines == (
        f"scenario/t/kv ({VERSIONS[0]}): step 0: expected storage_units at most {new_slot - 1}, the reference gives "
        f"{new_slot}",
        f"scenario/t/kv ({VERSIONS[0]}): step 0: expected slot 0x3 of 0x100 = 0x0, the reference gives 0x9")


def test_the_guide_example_fails_as_the_guide_shows(monkeypatch, capsys):
    """docs/guides/vectors.md, "Stating what the author expects": its Python block defines
    ``example``; ``vectors fill --check`` with it prints the guide's console lines."""
    from pathlib import Path

    from rtwo_vm import cli
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guides" / "vectors.md").read_text(encoding="utf-8")
    section = guide.split("## Stating what the author expects", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    console = section.split("```console\n", 1)[1].split("```", 1)[0].splitlines()
    namespace: dict = {}
    exec(code, namespace)
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter([namespace["example"]]))
    assert cli.main(["vectors", "fill", "--check", "--source", "definition"]) == 2
    assert console[0] == "$ rtwo-vm vectors fill --check"
    assert capsys.readouterr().err.strip().splitlines() == console[1:]


def test_a_long_list_of_problems_is_cut_and_counted():
    from rtwo_vm.commands.vectors.author import MAX_EXPECTATION_LINES, _one_line
    lines = [f"arithmetic/ADD/t{i} (1.0): expected success, the reference gives TRAP_EXECUTED"
             for i in range(MAX_EXPECTATION_LINES + 3)]
    shown = _one_line(ExpectationFailed(lines)).splitlines()
    assert shown[0].startswith(f"author expectations fail ({len(lines)} problems in {len(lines)} definitions)")
    assert shown[1:-1] == lines[:MAX_EXPECTATION_LINES] and shown[-1] == "(and 3 more)"


def test_every_conforming_outcome_code_is_expected_by_some_definition():
    """Each code of each version's errors.toml but INTERNAL_ERROR (never conforming, 7.4) is the
    stated outcome or call outcome of a definition valid in that version, so no code's vectors
    rest on the reference alone."""
    from conformance.corpus.coverage import NEVER_CONFORMING
    from conformance.corpus.definitions import all_cases
    from conformance.corpus.expect import expect_for
    for version in VERSIONS:
        stated = set()
        for case in all_cases():
            expect = expect_for(case.expect, version) if case.valid_in(version) else None
            if expect is not None:
                stated |= {expect.outcome, *(expect.calls or ())}
        assert [c for c in spec.load(version).errors if c not in stated] == list(NEVER_CONFORMING), version
