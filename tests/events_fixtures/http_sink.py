"""A webhook receiver that misbehaves on request, run as its own process by the tests.

    python http_sink.py LOG MODE [ARG]

Prints its port on stdout, then serves 127.0.0.1 over HTTP/1.1 keep-alive and appends one JSON
line per request it read to LOG (connection number, event id, signature header, body).
Modes: ``ok`` (204), ``fail`` (503 always), ``fail-event ID COUNT`` (503 for event ID, COUNT
times, 204 otherwise), ``hang`` (reads the request, never answers), ``slow SECONDS`` (answers
each request after SECONDS).
"""

import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG, MODE, ARGS = sys.argv[1], sys.argv[2], sys.argv[3:]
connections = itertools.count(1)
lock = threading.Lock()
state = {"left": int(ARGS[1]) if MODE == "fail-event" else 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection_number = next(connections)

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        event_id = int(self.headers.get("X-RTWO-Event-Id", "0"))
        with lock, open(LOG, "a") as log:
            log.write(json.dumps({"conn": self.connection_number, "eventId": event_id,
                                  "signature": self.headers.get("X-RTWO-Signature"),
                                  "body": body.decode()}) + "\n")
        status = 204
        if MODE == "fail":
            status = 503
        elif MODE == "fail-event" and event_id == int(ARGS[0]):
            with lock:
                if state["left"] > 0:
                    state["left"] -= 1
                    status = 503
        elif MODE == "hang":
            while True:
                time.sleep(3600)
        elif MODE == "slow":
            time.sleep(float(ARGS[0]))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
