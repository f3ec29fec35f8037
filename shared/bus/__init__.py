"""The event bus: envelopes, subjects, streams and JetStream publishing and consuming.

Import from the submodules. This package module stays empty on purpose: pure cores import
shared.bus.envelope and shared.bus.subjects, and must not pull in the NATS client through it.
"""
