"""The fuzzer's backend: the shared fan-out package's actors (fanout/actors.py), re-exported
under the name the fuzzer and its users have always imported."""

from fanout.actors import (  # noqa: F401 - the fuzzer's API
    BackendError, InProcess, LocalProcesses, RayActors, make_backend, map_tasks, ray_available,
)
