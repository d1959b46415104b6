"""A call reads only what it touches (issue 13, item 3): the interpreter reads storage
through the journal slot by slot, the request checks do not visit untouched state, and the
runtime reads code and slots from SQLite by primary key. Speed itself is measured by
benchmarks/state_benchmark.py; these tests check what is read."""

from __future__ import annotations

import json
import re
from pathlib import Path


from reference_vm import Contract, Message, StateView, WorldState, assemble, execute
from reference_vm import state as state_mod
from test_runtime_support import VERSION
from rtwo_vm.cli import main
from rtwo_vm.runtime import CallRequest, Runtime

ROOT = Path(__file__).resolve().parent.parent
COUNTER = assemble((ROOT / "examples" / "counter.rasm").read_text(), VERSION)  # reads and writes slot 0
PROXY = assemble((ROOT / "examples" / "proxy.rasm").read_text(), VERSION)


class Recording(StateView):
    """A dict-backed view that records every key it is asked for, and refuses iteration."""

    def __init__(self, data: dict):
        self.data = data
        self.asked: list[object] = []

    def __getitem__(self, key):
        self.asked.append(key)
        return self.data[key]

    def __iter__(self):
        raise AssertionError("the execution iterated over the state")

    def __len__(self):
        raise AssertionError("the execution asked for the size of the state")


def test_an_execution_reads_only_the_slots_and_contracts_it_touches():
    storage = Recording({0: 41, **{k: k for k in range(1, 5000)}})
    contracts = Recording({0x100: Contract(COUNTER, storage),
                           **{a: Contract(COUNTER) for a in range(0x200, 0x300)}})
    result = execute(WorldState(contracts), Message(0x100, 1), version=VERSION)
    assert result.ok and int.from_bytes(result.output, "little") == 42
    assert set(storage.asked) == {0}
    assert set(contracts.asked) == {0x100}
    assert [(c.key, c.before, c.after) for c in result.state_changes] == [(0, 41, 42)]


def test_a_state_is_checked_once_not_by_every_execution(monkeypatch):
    seen = []
    original = state_mod._problem
    monkeypatch.setattr(state_mod, "_problem", lambda c, m: seen.append(m) or original(c, m))
    state = WorldState({0x100: Contract(COUNTER, {k: 1 for k in range(1000)})})
    for _ in range(3):
        assert execute(state, Message(0x100, 1), version=VERSION).ok
    assert len(seen) == 1


def test_a_malformed_plain_state_is_still_invalid_request():
    state = WorldState({0x100: Contract(COUNTER, {-1: 5})})
    result = execute(state, Message(0x100, 1), version=VERSION)
    assert (result.status, result.error) == ("rejected", "INVALID_REQUEST")


def _statements(rt: Runtime, request: CallRequest) -> list[str]:
    seen: list[str] = []
    rt.store.conn.set_trace_callback(seen.append)
    try:
        assert rt.call(request).result.execution_status == "success"
    finally:
        rt.store.conn.set_trace_callback(None)
    return seen


def _storage_reads(statements: list[str]) -> list[str]:
    return [s for s in statements if re.search(r"\bFROM storage\b", s)]


def _shape(statements: list[str]) -> list[str]:
    """The statements with their literal values blanked (ids and times differ per call)."""
    return [re.sub(r"'[^']*'|\b\d+\b", "?", s) for s in statements]


def test_a_runtime_call_reads_storage_by_primary_key_whatever_the_state_size(tmp_path):
    shapes = []
    for slots in (10, 3000):
        with Runtime(tmp_path / f"s{slots}.db") as rt:
            rt.deploy(COUNTER, 0x100, {0: 41, **{k: k for k in range(1, slots)}})
            rt.deploy(COUNTER, 0x200, {k: k for k in range(1, slots)})
            statements = _statements(rt, CallRequest(to=0x100, caller=1))
        reads = _storage_reads(statements)
        assert reads and all("WHERE address = ? AND key = ?" in s or "WHERE address = '" in s
                             for s in reads), reads
        assert not any(re.search(r"FROM storage\s*$", s) for s in statements)
        shapes.append(_shape(statements))
    assert shapes[0] == shapes[1]  # the same statements at 10 and 3,000 slots


def test_a_nested_call_reads_the_callee_by_primary_key(tmp_path):
    with Runtime(tmp_path / "n.db") as rt:
        rt.deploy(PROXY, 0x100)
        rt.deploy(COUNTER, 0x101, {k: k for k in range(1, 2000)})
        rt.deploy(assemble((ROOT / "examples" / "reverter.rasm").read_text(), VERSION), 0x102)
        for a in range(0x300, 0x340):
            rt.deploy(COUNTER, a)
        statements = _statements(rt, CallRequest(to=0x100, caller=1))
    contract_reads = [s for s in statements if re.search(r"\bFROM contracts\b", s)]
    assert contract_reads and all("WHERE address = " in s for s in contract_reads)


def test_a_stored_value_that_is_not_a_word_is_an_internal_error_when_read(tmp_path):
    with Runtime(tmp_path / "bad.db") as rt:
        rt.deploy(COUNTER, 0x100, {0: 41})
        rt.store.conn.execute("UPDATE storage SET value = 'nonsense' WHERE address = '0x100'")
        recorded = rt.call(CallRequest(to=0x100, caller=1))
        assert (recorded.result.execution_status, recorded.result.error) == ("internal", "INTERNAL_ERROR")
        rows = rt.store.all("SELECT key, value FROM storage WHERE address = '0x100'")
        assert [tuple(r) for r in rows] == [("0x0", "nonsense")]  # nothing was written
        # Shown, the damaged slot is a damaged entry naming the row, beside the others.
        (entry,) = rt.contract(0x100)["damaged"]
        assert entry["table"] == "storage" and entry["id"] == "0x100/0x0"
        assert entry["reason"].startswith("value holds 'nonsense', not a word")


def test_deploy_storage_file_loads_large_initial_storage(tmp_path, capsys):
    slots = {hex(k): hex(k * 3) for k in range(1, 20_001)}
    path = tmp_path / "storage.json"
    path.write_text(json.dumps(slots))
    db = str(tmp_path / "big.db")
    assert main(["deploy", str(ROOT / "examples" / "counter.rasm"), "--storage-file", str(path),
                 "--storage", "0=41", "--db", db]) == 0
    assert "20001 storage slots" in capsys.readouterr().out
    with Runtime(db) as rt:
        shown = rt.contract(0x100)["storage"]
    assert len(shown) == 20_001 and shown["0x4e20"] == hex(0x4e20 * 3) and shown["0x0"] == "0x29"
    bad = tmp_path / "bad.json"
    bad.write_text('{"0x1": [1]}')
    assert main(["deploy", str(ROOT / "examples" / "counter.rasm"), "--storage-file", str(bad),
                 "--address", "0x999", "--db", db]) == 2
    assert capsys.readouterr().err.count("\n") == 1
