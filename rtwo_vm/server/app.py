"""The ASGI application of ``rtwo-vm serve``: the JSON API and the dashboard over one database.

    app = create_app("rtwo-vm.db", token=None, data_dir=Path("/srv/rtwo-data"))   # read-only

``token``: the bearer token every action needs (``--token-file``); without one the server is
read-only: every action answers 401. ``served``: the Host names and origins answered
(rtwo_vm/server/served.py; default: the loopback names at any port, for an application run in
process); ``limits``: the connection bounds (default: api.toml's), read by access.py and
connection.py. ``data_dir``: the data directory readiness and /reports read the evidence from
(the files of rtwo_vm/runtime/tools.py EvidenceFiles; ``rtwo-vm serve --data-dir``, resolved by
rtwo_vm/arguments/evidence.py); None: no evidence file is read, and the pages and answers say
so (never a file of the working directory). The API's routes are ``rtwo_vm.server.api.router``
(under ``/api/v1``), the dashboard's ``rtwo_vm.server.dashboard.router`` (``/`` and its pages,
``/static``, ``/live``). Both read the readiness report and the instruction registry from
``app.state.readiness`` and ``app.state.instructions`` (rtwo_vm/server/background.py): one
computation of each per process.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from rtwo_vm.server.runtimes import Runtimes
from rtwo_vm.server.served import Limits, Served

API_PREFIX = "/api/v1"


def create_app(db: str | Path, *, token: str | None = None, served: Served | None = None,
               limits: Limits | None = None, data_dir: Path | None = None) -> FastAPI:
    from rtwo_vm.runtime.registry import engine_version
    from rtwo_vm.server import access, api, dashboard
    from rtwo_vm.server.api.codes import bounds
    from rtwo_vm.runtime.tools import EvidenceFiles
    from rtwo_vm.server.background import InstructionsCache, ReadinessCache

    data_dir = None if data_dir is None else Path(data_dir).absolute()
    runtimes = Runtimes(db, data_dir)
    runtimes.give(runtimes.take())   # open (and create or migrate) the database before serving

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        try:
            yield
        finally:
            runtimes.close()

    # No /docs or /redoc: FastAPI's Swagger UI and ReDoc pages load their scripts from a CDN,
    # and the server works offline; /openapi.json describes the API.
    app = FastAPI(title="RTWO VM", version=engine_version(), lifespan=lifespan,
                  summary="The RTWO VM runtime's eleven services over HTTP (spec chapter 10)",
                  docs_url=None, redoc_url=None)
    app.state.runtimes = runtimes
    app.state.token = token
    app.state.served = served or Served.of(None, None)
    app.state.limits = limits or Limits.defaults()
    # One of each per process, read by the API and the dashboard (background.py).
    app.state.readiness = ReadinessCache(runtimes.path, bounds().readiness_max_age_seconds,
                                         data_dir)
    # The evidence files /reports reads, the same the CLI's commands write (None: none given).
    app.state.evidence = None if data_dir is None else EvidenceFiles(data_dir)
    app.state.instructions = InstructionsCache()
    access.install(app)
    api.install(app, API_PREFIX)
    dashboard.install(app)
    return app
