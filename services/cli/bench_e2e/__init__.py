"""`lahar bench e2e`: the whole stack's throughput and latency on hollow nodes, measured as a user would."""
