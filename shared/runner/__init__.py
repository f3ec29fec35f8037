"""The event-sourced service loop: a pure Core (shared.runner_types) driven by the event log.

from shared.runner import EventSourcedService, RunnerConfig
"""

from shared.runner.config import RunnerConfig
from shared.runner.service import EventSourcedService

__all__ = ["EventSourcedService", "RunnerConfig"]
