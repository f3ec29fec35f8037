"""State in etcd: the client wrapper, read model, checkpoints, leases, leader election, membership.

Import from the submodules; this package module imports nothing so that importing one of them does not
load the others.
"""
