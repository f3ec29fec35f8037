"""The fields of Volcano's own examples (examples/volcano/, copied unchanged) that no API knows: the
Kubernetes API server refuses them under kubectl's default --validate=strict, and so does lahar. Tests
that take the examples as a Volcano user brings them check these with --validate=warn, and check that
strict names exactly these (examples/volcano/README.md)."""

from __future__ import annotations

# each file, relative to examples/volcano/, with the path of each unknown field
VOLCANO_UNKNOWN_FIELDS: dict[str, tuple[str, ...]] = {
    # `priorityClass` for the pod spec's `priorityClassName`
    "kubecon-2019-china/task-priority/elastic-job.yaml": (
        "spec.tasks[0].template.spec.priorityClass",
        "spec.tasks[1].template.spec.priorityClass",
    ),
}


def needs_warn(relative_paths: list[str]) -> bool:
    """Whether any of these example files (relative to examples/volcano/) holds an unknown field."""
    return any(path in VOLCANO_UNKNOWN_FIELDS for path in relative_paths)
