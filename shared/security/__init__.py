"""Identities and permissions on the bus (docs/security.md)."""
