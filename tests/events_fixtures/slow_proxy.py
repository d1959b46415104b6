"""A TCP proxy in front of a NATS server that delays JetStream publish acknowledgements.

    python slow_proxy.py TARGET_PORT DELAY_FILE

Prints its port on stdout. Client -> server bytes pass at once; a server -> client chunk that
holds a publish acknowledgement (``{"stream":"``) is held for the number of seconds written in
DELAY_FILE (read for each such chunk; 0 or missing: no delay), order kept.
"""

import socket
import sys
import threading
import time
from pathlib import Path

TARGET, DELAY = int(sys.argv[1]), Path(sys.argv[2])


def delay() -> float:
    try:
        return float(DELAY.read_text() or 0)
    except (OSError, ValueError):
        return 0.0


def pump(src, dst, slow: bool) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if slow and b'{"stream":"' in data:
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
