"""``--ray local|ADDRESS`` and ``--resume DIR``: the options of every command whose tasks fan
out on a Ray cluster (fanout/, the fuzzer's backend): ``prove``, ``prove --strength`` and
``vectors strength``. Checked before any work: without Ray installed ``--ray`` is refused in
one line (exit 2); every command without ``--ray`` works as before."""

from __future__ import annotations

import re

from rtwo_vm.arguments.inputs import CliError

_ADDRESS = re.compile(r"(ray://)?[A-Za-z0-9._\-\[\]:]{1,200}:[0-9]{1,5}\Z")


def add_ray(p, what: str = "tasks") -> None:
    p.add_argument("--ray", metavar="local|ADDRESS", default=None,
                   help=f"run the {what} on Ray: 'local' starts a private cluster on this "
                        "machine, ADDRESS (host:port) joins a running one (ray start --head); "
                        "needs the distributed extra. A worker or node lost mid-run: its "
                        "tasks run again elsewhere")


def add_resume(p) -> None:
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="keep every finished task in DIR (sealed with the local cache key); run "
                        "again with the same DIR and options to do only what is not done")


def ray_address(args) -> str | None:
    """``--ray``'s value, checked: None, 'local' or HOST:PORT; CliError without Ray."""
    address = getattr(args, "ray", None)
    if address is None:
        return None
    from fanout.ray_setup import NEEDS_RAY, available
    if address != "local" and not _ADDRESS.match(address):
        raise CliError(f"--ray {address[:60]!r}: 'local' or a cluster address HOST:PORT")
    if not available():
        raise CliError(NEEDS_RAY)
    return address


def resume_state(folder: str, key_file: str | None = None, what: str | None = "tasks"):
    """``--resume DIR``: the run's state maker, ``digest -> fanout.resume.State``, sealed with
    the local proofs-cache key (``key_file``, default proofs/cache.default_key), whose
    ``load`` says on stderr how many ``what`` were done before and how many lines it refused
    (``what`` None: the caller says it, from ``done`` and ``refused``). A folder
    or key that cannot be used is refused in one line (CliError) when the run starts."""
    import sys
    from pathlib import Path

    from fanout.resume import State, StateError
    from proofs import cache

    class Said(State):
        def load(self, known):
            done = super().load(known)
            if what is None:
                return done
            print(f"resume: {len(done)} of {len(known)} {what} done before, run again "
                  f"{len(known) - len(done)}" + (f"; {self.refused} state lines refused (not "
                                                 "sealed by this machine's key, or cut short): "
                                                 "their tasks run again" if self.refused else ""),
                  file=sys.stderr, flush=True)
            return done

    def make(digest: str) -> State:
        try:
            key = cache.load_key(Path(key_file) if key_file else cache.default_key())
            return Said(folder, key, digest)
        except (StateError, cache.CacheError) as err:
            raise CliError(str(err)) from None
    return make
