"""``rtwo-vm symbolic --invariant FILE --depth K``: invariants after every call of every
sequence of up to K calls. The planted two-call bug of examples/vault.rasm is found at depth 2
and not at depth 1, with no hint of the sequence, and its sequence replays on the reference
interpreter (run here call by call, the state carried by hand); the true invariants of the
token and the counter hold to the stated depth; planted false invariants are violated by the
sequences worked out below; small budgets give bounded / unknown, never holds; hostile input
gets one line and exit 2. Expectations are worked out from the contracts' source."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.scenario.schema import vector_problems
from proofs.symbolic.vectors import request_of
from reference_vm import Message, execute
from rtwo_vm.cli import main

EX = Path(__file__).resolve().parents[1] / "examples"
VAULT = (str(EX / "vault.rasm"), "--storage", "0xa=100", "--concrete-storage",
         "--invariant", str(EX / "vault_invariants.py"))
COUNTER_FALSE = '''
import z3
from proofs.symbolic.invariants import invariant

@invariant("count_stays_below_two")
def below_two(s):
    return [z3.ULT(s.storage[0], s.word(2))]
'''
NEVER_DECREASES_UNASSUMED = '''
from proofs.symbolic.invariants import invariant

@invariant("never_decreases")
def never_decreases(s):
    return [s.int(s.before.storage[0]) <= s.int(s.storage[0])]
'''


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_vault_bug_needs_two_calls_and_its_sequence_replays_on_the_reference(capsys):
    code, out, err = run(capsys, "symbolic", *VAULT, "--depth", "1", "--counterexamples", "one")
    assert code == 0, err
    assert "invariant paid_out_within_the_credits: holds to depth 1" in out
    assert not Path("one").exists()
    code, out, err = run(capsys, "symbolic", *VAULT, "--depth", "2", "--json",
                         "--counterexamples", "cex")
    assert code == 1, err
    (verdict,) = json.loads(out)["verdicts"]
    assert verdict["verdict"] == "violated"
    seq = verdict["counterexample"]
    # 0xa is the only account with credit (caller 0 is refused): it withdraws twice; the
    # total paid out goes 0 -> 100 -> 200, above the 100 of credit the vault started with
    assert [c["caller"] for c in seq["calls"]] == ["0xa", "0xa"]
    assert seq["initial_storage"] == {"0x100": {"0x0": "0x0", "0xa": "0x64"}}
    assert [c["state_changes"] for c in seq["calls"]] == [
        [{"address": "0x100", "key": "0x0", "before": "0x0", "after": "0x64"}],
        [{"address": "0x100", "key": "0x0", "before": "0x64", "after": "0xc8"}]]
    assert seq["replay"] == "violated"
    (line,) = Path("cex/scenarios/invariants.jsonl").read_text().splitlines()
    vector = json.loads(line)
    assert vector_problems(vector) == []
    assert vector["tags"]["source"] == "symbolic"
    # the scenario run here, call by call on the reference, the state carried by hand
    scenario = vector["input"]
    first = scenario["steps"][0]
    state = request_of({**first, "pre_state": scenario["pre_state"]}, first["spec_version"])[0]
    for step, expected in zip(scenario["steps"], vector["expected"]["steps"]):
        _, message, context, policy, limits = request_of(
            {**step, "pre_state": scenario["pre_state"]}, step["spec_version"])
        result = execute(state, Message(message.to, message.caller, message.call_data), context,
                         policy, limits, version=step["spec_version"])
        assert result.to_json() == expected["result"] and result.ok
        state = state.with_changes(result.state_changes)
    assert dict(state.storage_of(0x100)) == {0: 200, 0xa: 100}


def test_the_token_keeps_its_total_supply_over_two_transfers(capsys):
    code, out, err = run(capsys, "symbolic", str(EX / "token.rasm"), "--storage", "0xa=0x3e8",
                         "--storage", "0xb=0x64", "--concrete-storage", "--invariant",
                         str(EX / "token_invariants.py"), "--depth", "2")
    assert code == 0, out + err
    assert "invariant total_supply_is_constant: holds to depth 2" in out


def test_the_counter_invariants_hold_to_depth_3(capsys):
    code, out, err = run(capsys, "symbolic", str(EX / "counter.rasm"), "--invariant",
                         str(EX / "counter_invariants.py"), "--depth", "3")
    assert code == 0, out + err
    assert "invariant count_is_the_number_of_successful_calls: holds to depth 3" in out
    assert "invariant count_never_decreases: holds to depth 3" in out


def test_planted_false_invariants_are_violated_by_the_shortest_sequence(capsys):
    Path("below_two.py").write_text(COUNTER_FALSE)
    counter = str(EX / "counter.rasm")
    code, out, _ = run(capsys, "symbolic", counter, "--concrete-storage", "--invariant",
                       "below_two.py", "--depth", "1")
    assert code == 0 and "holds to depth 1" in out          # one call: the count is 1
    code, out, _ = run(capsys, "symbolic", counter, "--concrete-storage", "--invariant",
                       "below_two.py", "--depth", "3", "--json")
    assert code == 1
    seq = json.loads(out)["verdicts"][0]["counterexample"]
    assert len(seq["calls"]) == 2 and seq["final_storage"] == {"0x100": {"0x0": "0x2"}}
    # without the pre-condition, a symbolic count of 2^64 - 1 wraps to 0 in one call
    Path("never.py").write_text(NEVER_DECREASES_UNASSUMED)
    code, out, _ = run(capsys, "symbolic", counter, "--invariant", "never.py", "--depth", "2",
                       "--json")
    assert code == 1
    seq = json.loads(out)["verdicts"][0]["counterexample"]
    assert seq["initial_storage"] == {"0x100": {"0x0": "0xffffffffffffffff"}}
    assert len(seq["calls"]) == 1 and seq["final_storage"] == {"0x100": {}}


def test_small_budgets_give_bounded_or_unknown_never_holds(capsys):
    counter = (str(EX / "counter.rasm"), "--invariant", str(EX / "counter_invariants.py"),
               "--depth", "3")
    code, out, _ = run(capsys, "symbolic", *counter, "--max-states", "3")
    assert code == 4 and "holds" not in out.replace("holds on every state checked", "")
    assert "bounded" in out and "NOT proved; raise --max-states" in out
    code, out, _ = run(capsys, "symbolic", *counter, "--rlimit", "1000")
    assert code == 4 and "unknown" in out and "holds to depth" not in out
    assert "raise --rlimit" in out
    code, out, _ = run(capsys, "symbolic", *counter, "--max-steps", "5")
    assert code == 4 and "bounded" in out and "max-steps 5" in out


def test_hostile_arguments_and_files_get_one_line_and_exit_2(capsys, tmp_path):
    counter = str(EX / "counter.rasm")
    files = {
        "raises.py": "raise ValueError('boom')\n",
        "exits.py": "import os\nos._exit(7)\n",
        "none.py": "x = 1\n",
        "outside.py": "import z3\nfrom proofs.symbolic.invariants import invariant\n"
                      "@invariant('x')\ndef f(s):\n    return [z3.Int2BV(s.successes, 64) == 0]\n",
        "nocontract.py": "from proofs.symbolic.invariants import invariant\n@invariant('x')\n"
                         "def f(s):\n    return [s.storage_at(0x999)[0] == 0]\n",
        "huge.py": "#" * (2 << 20),
        "loops.py": "while True:\n    pass\n",
    }
    for name, text in files.items():
        Path(name).write_text(text)
    before = sorted(p.name for p in tmp_path.iterdir())
    cases = [[counter, "--invariant", name, "--file-seconds", "3"] for name in files]
    cases += [[counter, "--invariant", "none.py", "--depth", d] for d in ("0", "17", "abc", "9" * 30)]
    cases += [[counter, "--depth", "2"], [counter, "--invariant", "missing.py"],
              [counter, "--invariant", str(EX / "counter_invariants.py"), "--calldata", "00"]]
    for argv in cases:
        code, out, err = run(capsys, "symbolic", *argv)
        assert code == 2 and out == "", argv
        assert len(err.strip().splitlines()) == 1 and err.startswith("rtwo-vm: error: "), (argv, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
