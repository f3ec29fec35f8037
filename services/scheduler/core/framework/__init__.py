"""The scheduling framework: a session (session.py) over a model built from a snapshot (build.py), the
extension points actions and plugins implement (action.py, plugin.py), their dispatch by tier
(tiers.py), statements (statement.py), placement helpers (placement.py) and the session's close
(close.py) into a plan (plan.py).

Layering: session.py is the top; it imports the other modules (and the registry of actions and plugins)
at run time, and none of them imports it at run time. The modules whose functions take the session
name `Session` in annotations only, under TYPE_CHECKING: a type-level back-reference to the top, never
an import cycle (tests/unit/scheduler/test_framework_layering.py holds this).
"""
