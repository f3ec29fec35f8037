"""Admission's pure core: Volcano's validating and mutating webhook rules as functions of (object, cluster
context), every problem reported as a `FieldError` with its field path, and `decide` for API requests."""
