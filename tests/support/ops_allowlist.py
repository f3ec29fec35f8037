"""Series that ops/ (the dashboards, the alerts) may query before any service exports them: a dashboard
written ahead of the metrics it reads. tests/unit/test_ops.py does not require a service to register a
name listed here, and tests/e2e/test_dashboards_stack.py accepts an expression without data when such a
series is why. Both fail as soon as a listed series is exported (or returns data), so the list only
shrinks. Empty now: every series ops/ queries is exported.
"""

from __future__ import annotations

NOT_YET_EXPORTED: frozenset[str] = frozenset()  # every series ops/ queries is exported now
