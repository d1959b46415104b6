"""Every subcommand driven with generated arguments and file contents: never a traceback,
always an exit status of the CLI's contract (issue 13, item 1).

Commands are found by walking the parser, so a command added later is driven too. Each
invocation runs in-process through ``rtwo_vm.cli.main`` in a fresh temporary directory.
Commands that run the whole system (proofs, the conformance runner, adapters, readiness,
fuzzing, filling the corpus) would take minutes per example: for those only the argument
parsing is driven (``parse_args``), which is where their generated input lands first.
"""

from __future__ import annotations

import argparse
import io
import os
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

import spec
from reference_vm import assemble
from rtwo_vm.cli import build_parser, main

EXIT_STATUSES = {0, 1, 2, 3}  # success, another outcome, bad input, not delivered
PARSE_ONLY = {("check",), ("prove",), ("readiness",), ("fuzz",), ("conformance",), ("serve",),
              ("vectors", "fill")}
FILES = ("code.rasm", "code.bin", "code.hex", "state.json", "scenarios.toml", "corpus",
         "missing.rasm", "junk.db")


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) of every leaf command."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, child in subs[0].choices.items():
        yield from _commands(child, (*path, name))


COMMANDS = sorted(_commands(build_parser()), key=lambda c: c[0])
MNEMONICS = sorted({m for v in spec.names() for m in spec.load(v).by_mnemonic})

words = st.one_of(
    st.integers(-2, 2 ** 70).map(str), st.integers(0, 2 ** 66).map(hex),
    st.sampled_from(["nan", "inf", "-inf", "0x", "", "-", "=", "0=0", "1=x", "0x100=code.rasm",
                     "0x" + "f" * 17, "9" * 30, "ADD", "add", "arithmetic", "FOO", "jsonl",
                     "webhook", "standard", "read_only", "success", "executing"]),
    st.sampled_from(MNEMONICS).map(lambda m: m.lower()),
    st.sampled_from(FILES),
    st.text(alphabet="abx0123456789_-.:/=%{}[]\"' ", max_size=12),
)

assembly_lines = st.one_of(
    st.sampled_from(MNEMONICS).map(str.lower),
    st.tuples(st.sampled_from(["push", "push1", "push8", "jump", "jumpi", ".zero", ".byte",
                               ".word", ".hex", ".ascii", "callsub"]), words).map(" ".join),
    st.sampled_from([".code", ".data", "start:", "loop: jumpdest", "stop", '.ascii "a\\x4"']),
)
assembly = st.lists(assembly_lines, max_size=12).map("\n".join)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.text(max_size=6),
              st.sampled_from(["0x00", "0x1", "code.rasm", "0x" + "00" * 16])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["contracts", "code", "storage",
                                                             "0x1", "0x100", "5", "x"]),
                                            inner, max_size=4)),
    max_leaves=12)
toml_text = st.one_of(
    st.just('[[scenario]]\nname = "s"\n[scenario.contracts."0x100"]\ncode = "code.rasm"\n'
            '[[scenario.call]]\nto = "0x100"\n'),
    st.lists(st.sampled_from(['[[scenario]]', 'name = "s"', 'contracts = 5', '[[scenario.call]]',
                              'to = "0x100"', 'to = 5', 'calldata = [1]', 'seed = "00"',
                              '[scenario.contracts."0x100"]', 'code = "code.rasm"',
                              'code = "code.bin"', 'storage = {0 = 1}', 'compute = -1',
                              'time_access = "allowed"', 'x = \xff']), max_size=10).map("\n".join),
)


@st.composite
def invocations(draw):
    path, parser = draw(st.sampled_from(COMMANDS))
    argv = list(path)
    for action in parser._actions:
        if action.option_strings or action.dest == "help":
            continue
        if action.nargs == "?" and draw(st.booleans()):
            continue
        choices = list(action.choices) if action.choices else None
        argv.append(draw(st.sampled_from(choices)) if choices and draw(st.integers(0, 5))
                    else draw(words))
    options = [a for a in parser._actions if a.option_strings and a.dest not in ("help", "version")]
    for action in draw(st.lists(st.sampled_from(options), max_size=4)) if options else ():
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(flag)
        elif action.choices and draw(st.booleans()):
            argv += [flag, str(draw(st.sampled_from(list(action.choices))))]
        else:
            argv += [flag, draw(words)]
    if any(a.dest == "db" for a in parser._actions) and "--db" not in argv:
        argv += ["--db", draw(st.sampled_from(["fresh.db", "junk.db", "state.json"]))]
    if path[0] == "vectors" and "--dir" not in argv:
        argv += ["--dir", "corpus"]  # the committed corpus takes seconds to load
    return path, argv


@st.composite
def workspaces(draw):
    return {
        "code.rasm": draw(assembly).encode(),
        "code.bin": draw(st.one_of(st.binary(max_size=64),
                                   st.just(assemble("push 1\nstop", "1.0")),
                                   st.binary(max_size=24).map(lambda b: b"RTWO\x01\x00\x00\x00" + b))),
        "code.hex": draw(st.sampled_from([assemble("push 2\nstop", "1.0").hex(), "0x", "zz", "0x0g"])).encode(),
        "state.json": draw(st.one_of(json_values.map(lambda v: __import__("json").dumps(v).encode()),
                                     st.binary(max_size=40))),
        "scenarios.toml": draw(toml_text).encode("utf-8", "surrogateescape"),
        "junk.db": draw(st.binary(max_size=200)),
        "corpus/manifest.json": draw(st.one_of(
            json_values.map(lambda v: __import__("json").dumps(v).encode()),
            st.just(b'{"digest": "00", "files": [{"path": "a.jsonl"}]}'))),
        "corpus/a.jsonl": draw(st.one_of(
            json_values.map(lambda v: __import__("json").dumps(v).encode()),
            st.just(b'{"id": "a", "tags": {"source": "s", "outcome": "success"}}\n'))),
        "corpus/scenarios.toml": draw(toml_text).encode(),
    }


def _run(argv: list[str], parse_only: bool) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            if parse_only:
                from rtwo_vm.arguments.inputs import CliError
                try:
                    build_parser().parse_args(argv)
                    code = 0
                except CliError as error:
                    print(f"rtwo-vm: error: {error}", file=err)
                    code = 2
            else:
                code = main(argv)
        except SystemExit as exit_:  # --help
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return code, err.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invocation=invocations(), files=workspaces())
def test_no_cli_input_gives_a_traceback(invocation, files):
    path, argv = invocation
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        for name, content in files.items():
            target = Path(tmp) / name
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(content)
        os.chdir(tmp)
        try:
            code, err = _run(argv, parse_only=path[:len(path)] in PARSE_ONLY or path[:1] in PARSE_ONLY)
        finally:
            os.chdir(old)
    assert "Traceback" not in err and "internal error" not in err, (argv, err[-2000:])
    assert code in EXIT_STATUSES, (argv, code, err[-2000:])
    if code == 2:
        last = err.rstrip("\n").splitlines()[-1]
        assert last.startswith("rtwo-vm: error: "), (argv, err[-500:])


def test_every_command_is_driven():
    names = {path for path, _ in COMMANDS}
    assert ("run",) in names and ("deploy",) in names and ("vectors", "check") in names
