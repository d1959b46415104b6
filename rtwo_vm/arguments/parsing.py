"""The argparse layer around the commands: grouped help and finite numbers.

Commands are registered by their modules (rtwo_vm/commands/*.py); what applies to all of
them is done here after they are, so that no module has to remember it: every float option
refuses nan and infinities, the top-level help lists the commands by group, and ``run``'s
options are grouped in its help.
"""

from __future__ import annotations

import argparse

from rtwo_vm.arguments.inputs import finite_float

# The top-level help lists the commands in these groups (a command a module registers that
# is in none of them is listed under "Other commands").
COMMAND_GROUPS = (
    ("Contracts", ("asm", "disasm", "run", "examples", "scenario", "spec")),
    ("Verification", ("check", "prove", "symbolic", "equivalence", "vectors", "conformance",
                      "fuzz")),
    ("Runtime services (a SQLite database, --db)",
     ("deploy", "call", "contracts", "vm", "contexts", "sandboxes", "accounting", "results",
      "violations", "events", "policy", "instructions", "readiness", "upgrade-check")),
)


# The options of `run`, grouped in its --help (an option in none of them stays under
# "options"); grouped after they are added, so the option block itself stays as it is.
RUN_OPTION_GROUPS = (
    ("the call", ("calldata", "calldata_words", "caller", "address", "storage", "contract", "state")),
    ("sandbox limits", ("compute", "memory_pages", "storage_units")),
    ("context and policy", ("time", "seed", "allow_time", "allow_randomness", "forbid_calls",
                            "storage_access", "forbid", "allow")),
    ("output", ("trace", "trace_format", "canonical", "vector_id")),
)


def group_options(parser: argparse.ArgumentParser, groups) -> None:
    """Move options from the default "options" group of ``parser`` into titled groups."""
    default = parser._optionals
    for title, dests in groups:
        group = parser.add_argument_group(title)
        for action in [a for a in default._group_actions if a.dest in dests]:
            default._group_actions.remove(action)
            group._group_actions.append(action)


def harden(parser: argparse.ArgumentParser) -> None:
    """Every float option of every command (whoever registered it) parses finite numbers."""
    for action in parser._actions:
        if action.type is float:
            action.type = finite_float
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                harden(child)


def group_commands(parser: argparse.ArgumentParser, sub) -> None:
    """Replace the flat list of commands in the top-level help by the COMMAND_GROUPS."""
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    listed = [n for _, names in COMMAND_GROUPS for n in names]
    groups = [(title, [n for n in names if n in helps]) for title, names in COMMAND_GROUPS]
    groups.append(("Other commands", [n for n in helps if n not in listed]))
    lines = []
    for title, names in groups:
        if names:
            lines.append(f"{title}:")
            lines += [f"  {n:<14}{helps[n]}" for n in names]
            lines.append("")
    parser.epilog = "\n".join(lines) + "rtwo-vm COMMAND --help shows a command's options."
    parser.usage = "rtwo-vm [-h] [--version] COMMAND ..."
    sub.help = argparse.SUPPRESS
    sub.metavar = "COMMAND"
    for action in list(sub._choices_actions):
        sub._choices_actions.remove(action)
