"""Admission: the one way objects enter lahar. It validates and defaults API requests with Volcano's
webhook rules (the pure core in `core/`) and appends the accepted spec events; `validate_cmd` runs the same
rules offline over manifest files."""
