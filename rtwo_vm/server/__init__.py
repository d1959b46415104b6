"""``rtwo-vm serve``: the runtime's eleven services over HTTP and the dashboard (issue 26).

One process, one database (the CLI's ``./rtwo-vm.db`` by default), no second implementation of
any service: every route calls the same ``rtwo_vm.runtime.Runtime`` the CLI uses.

    app.py        the ASGI application (``create_app``): routers, limits, error answers
    runtimes.py   one Runtime per worker thread over the database, closed at shutdown
    served.py     the Host names and origins served, the connection bounds
    connection.py the connections (uvicorn's h11 protocol): limit, header deadline, closing
    access.py     before any route: Host, repeated headers, origin, token, body bounds
    api/          the JSON API, ``/api/v1/...`` (read collections, records, actions)
    dashboard/    the pages, their static assets (shipped, no CDN) and live events (SSE)

FastAPI and uvicorn are the optional extra ``pip install '.[serve]'``; nothing else in the
package imports this folder.
"""

from rtwo_vm.server.app import create_app

__all__ = ["create_app"]
