"""``rtwo-vm serve``: the runtime's services over HTTP and the dashboard (rtwo_vm/server/).

    rtwo-vm serve [--db PATH] [--host 127.0.0.1] [--port 8080] [--token-file FILE]
                  [--allow-host NAME[:PORT] ...] [--header-timeout S] [--body-timeout S]
                  [--max-connections N] [--data-dir DIR]
    rtwo-vm serve --print-openapi      # the OpenAPI document (docs/api/openapi.json), no server

Read-only without ``--token-file``; every action (deploy, call, policy create, events requeue,
deliver) needs ``Authorization: Bearer <the file's token>``. Binding to an address other than
the loopback needs a token file. Requests are answered for the loopback names and the bound
address with the bound port, and for the names given with ``--allow-host`` (a reverse
proxy's); the deadlines and the connection limit default to spec/data/api.toml's bounds.
Readiness and the dashboard's /reports read the evidence in the data directory (``--data-dir``,
else ``$RTWO_VM_DATA``, else the user's: rtwo_vm/arguments/evidence.py), never the working
directory's; the start line names it. FastAPI and uvicorn are the extra ``pip install
'.[serve]'``; without it the command refuses in one line (exit 2).
"""

from __future__ import annotations

import ipaddress
import os
import stat

from rtwo_vm.arguments.evidence import DATA_ENV, add_data_option, data_dir
from rtwo_vm.arguments.inputs import CliError, parse_count
from rtwo_vm.arguments.runtime import DB_ENV, DEFAULT_DB

TOKEN_MIN, TOKEN_MAX = 16, 4096   # characters of a token file's token
MAX_SECONDS = 86400               # the longest deadline an option accepts
MAX_CONNECTIONS = 65536           # the largest --max-connections (file descriptors run out first)


def register(sub) -> None:
    p = sub.add_parser("serve", help="serve the runtime's services over HTTP, with the dashboard",
                       description="The runtime's services over HTTP (/api/v1) and the dashboard, over one database; read-only without --token-file.")
    p.add_argument("--db", default=os.environ.get(DB_ENV, DEFAULT_DB),
                   help=f"the database (default: ${DB_ENV}, else ./{DEFAULT_DB}); created if missing")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", default="8080", help="port to bind (default 8080; 0: any free port)")
    p.add_argument("--token-file", help="a file holding the bearer token actions need "
                                        f"({TOKEN_MIN}-{TOKEN_MAX} printable characters)")
    p.add_argument("--allow-host", dest="allow_host", action="append", default=[],
                   metavar="NAME[:PORT]",
                   help="also answer requests whose Host is NAME (any port) or NAME:PORT, "
                        "e.g. a reverse proxy's name (repeatable; default: the loopback names "
                        "and the bound address, with the bound port)")
    p.add_argument("--header-timeout", dest="header_timeout", metavar="SECONDS",
                   help="seconds a request's header may take to arrive (default: api.toml "
                        "bounds.header_timeout_seconds)")
    p.add_argument("--body-timeout", dest="body_timeout", metavar="SECONDS",
                   help="seconds an action's body may take to arrive after its header "
                        "(default: api.toml bounds.body_timeout_seconds)")
    p.add_argument("--max-connections", dest="max_connections", metavar="N",
                   help="connections open at once; more are refused (default: api.toml "
                        "bounds.max_connections)")
    add_data_option(p, "readiness and /reports read the evidence from")
    p.add_argument("--print-openapi", dest="print_openapi", action="store_true",
                   help="print the API's OpenAPI document (as /openapi.json serves it) and exit")
    p.set_defaults(func=_cmd_serve)


def read_token(path: str) -> str:
    """The token in ``path``: one line of printable ASCII, without spaces, of a bounded length."""
    try:
        with open(path, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise CliError(f"--token-file {path}: not a regular file")
            raw = handle.read(TOKEN_MAX + 2)
    except OSError as err:
        raise CliError(f"--token-file {path}: {err.strerror or err}") from None
    token = raw.rstrip(b"\r\n")
    if not TOKEN_MIN <= len(token) <= TOKEN_MAX or not all(0x21 <= b <= 0x7e for b in token):
        raise CliError(f"--token-file {path}: the token must be one line of {TOKEN_MIN}-{TOKEN_MAX} "
                       "printable characters without spaces")
    return token.decode("ascii")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def openapi_text() -> str:
    """The OpenAPI document the server serves at /openapi.json, as committed in
    docs/api/openapi.json (sorted keys, two-space indent, a final newline)."""
    import json
    from rtwo_vm.server import create_app
    return json.dumps(create_app(":memory:").openapi(), indent=2, sort_keys=True) + "\n"


def _bind(host: str, port: int):
    """A listening socket on ``host``:``port`` (0: a free port, reported by the start line)."""
    import socket
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise CliError(f"--host {host}: {err.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as err:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


def _bounded(text: str | None, what: str, least: int, most: int) -> int | None:
    if text is None:
        return None
    value = parse_count(text, what)
    if not least <= value <= most:
        raise CliError(f"{what} must be from {least} to {most}, got {text[:40]}")
    return value


def _cmd_serve(args) -> int:
    if args.print_openapi:
        try:
            print(openapi_text(), end="")
        except ImportError as err:
            raise CliError(f"rtwo-vm serve needs the serve extra (pip install 'rtwo-vm[serve]'): {err}") from None
        return 0
    port = parse_count(args.port, "--port")
    if port > 65535:
        raise CliError(f"--port must be at most 65535, got {args.port}")
    token = read_token(args.token_file) if args.token_file else None
    if token is None and not _loopback(args.host):
        raise CliError(f"--host {args.host} is not a loopback address: give --token-file to serve it")
    header_timeout = _bounded(args.header_timeout, "--header-timeout", 1, MAX_SECONDS)
    body_timeout = _bounded(args.body_timeout, "--body-timeout", 1, MAX_SECONDS)
    max_connections = _bounded(args.max_connections, "--max-connections", 2, MAX_CONNECTIONS)
    try:
        import uvicorn
        from rtwo_vm.server import create_app
        from rtwo_vm.server.connection import protocol
        from rtwo_vm.server.served import Limits, Served
    except ImportError as err:
        raise CliError(f"rtwo-vm serve needs the serve extra (pip install 'rtwo-vm[serve]'): {err}") from None
    from rtwo_vm.runtime import StoreError
    try:
        Served.of(args.host, port, args.allow_host)
    except ValueError as err:
        raise CliError(f"--allow-host {err}") from None
    limits = Limits.defaults(header_timeout=header_timeout, body_timeout=body_timeout,
                             max_connections=max_connections)
    sock = _bind(args.host, port)
    try:
        bound_port = sock.getsockname()[1]
        app = create_app(args.db, token=token, served=Served.of(args.host, bound_port, args.allow_host),
                         limits=limits, data_dir=data_dir(args))
    except StoreError as err:
        sock.close()
        raise CliError(str(err)) from None
    except BaseException:
        sock.close()
        raise
    host = f"[{args.host}]" if ":" in args.host else args.host
    access = "actions need the token" if token else "read-only: no --token-file"
    print(f"rtwo-vm serve: http://{host}:{bound_port}/ over {args.db} ({access}); evidence "
          f"from {data_dir(args)} (--data-dir, ${DATA_ENV}); Ctrl-C stops", flush=True)
    app.state.readiness.refresh()  # the first readiness report, computed in the background
    # The connections are rtwo_vm/server/connection.py's: h11 with the connection limit, the
    # header deadline, graceful closing and small reads (on asyncio's loop, whose transports
    # it sets; uvloop's are not); no WebSocket (the server serves none) and no
    # X-Forwarded-* (a page on a rebound name could send them). An idle keep-alive connection
    # is kept longer than clients keep theirs (httpx and most pools: 5 s): closed at the same
    # moment, a client would send its next request on a connection the server is closing.
    config = uvicorn.Config(app, log_level="warning", access_log=False, http=protocol(limits),
                            loop="asyncio", ws="none", proxy_headers=False,
                            timeout_keep_alive=limits.keep_alive,
                            h11_max_incomplete_event_size=limits.max_header_bytes)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
