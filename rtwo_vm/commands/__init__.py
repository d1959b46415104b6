"""Subcommands contributed by the tools around the reference VM.

Each module defines ``register(subparsers)`` adding its commands; a command function takes
the parsed arguments and returns the exit code, raising rtwo_vm.arguments.inputs.CliError for bad input.
Import heavy dependencies inside the command function, not at module level.
"""
