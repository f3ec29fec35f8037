"""The node agent: runs the pods bound to its nodes and reports their phases.

`core/` is the pure pod lifecycle (what to start, stop and publish; the restart rule is in its
`core.py`); `runtime/` holds the two runtimes behind one protocol: `process` (containers as local
processes, one directory per pod under the agent's data dir) and `sim` (hollow nodes, simulated
durations, thousands of pods per process).
"""
