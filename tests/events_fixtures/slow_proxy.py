"""A TCP proxy in front of a NATS server that delays JetStream publish acknowledgements.

    python slow_proxy.py TARGET_PORT DELAY_FILE

Prints its port on stdout. Client -> server bytes pass at once; a server -> client chunk that
holds a publish acknowledgement (``{"stream":"``) is held for the number of seconds written in
DELAY_FILE (read for each such chunk; 0 or missing: no delay), order kept. ``hold N`` in
DELAY_FILE passes acknowledgement chunks until N acknowledgements have gone through, then
holds every further one until the file says something else.
"""

import select
import socket
import sys
import threading
import time
from pathlib import Path

TARGET, DELAY = int(sys.argv[1]), Path(sys.argv[2])


PASSED = [0]   # acknowledgements passed to the client so far


def control() -> str:
    try:
        return DELAY.read_text().strip()
    except OSError:
        return ""


def delay() -> float:
    try:
        return float(control() or 0)
    except ValueError:
        return 0.0


def wait_turn(src, acks: int) -> bytes:
    """Block while a ``hold N`` rule says this chunk must not go through yet; what the server
    sends meanwhile is kept (and returned, to follow the chunk), and the server closing its
    side ends the wait (OSError: the connection is gone)."""
    more = b""
    while True:
        words = control().split()
        if len(words) != 2 or words[0] != "hold" or PASSED[0] < int(words[1]):
            break
        if select.select([src], [], [], 0.005)[0]:
            data = src.recv(65536)
            if not data:
                raise OSError("the server closed the connection")
            more += data
    PASSED[0] += acks + more.count(b'{"stream":"')
    return more


def pump(src, dst, slow: bool) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if slow and b'{"stream":"' in data:
                data += wait_turn(src, data.count(b'{"stream":"'))
                time.sleep(delay())
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
while True:
    client, _ = listener.accept()
    try:
        server = socket.create_connection(("127.0.0.1", TARGET))
    except OSError:  # the server is down: so is this connection
        client.close()
        continue
    threading.Thread(target=pump, args=(client, server, False), daemon=True).start()
    threading.Thread(target=pump, args=(server, client, True), daemon=True).start()
