"""What every command reads from its command line, checked before any work: values and files
(``inputs``: words, hex, counts, code of a spec version, state files, policies; CliError),
the help's layout and hardening (``parsing``), and the option groups several commands share
(``corpus``: which corpus; ``sinks``: event sinks; ``userfiles``: limits of a user's file;
``runtime``: the runtime commands' database, refusals and printing)."""
