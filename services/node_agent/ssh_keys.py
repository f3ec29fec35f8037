"""The ssh plugin's private files on a node agent.

The job's key pair comes from the log (a JobSecretCreated that admission writes with the job, sealed to
the node agents, folded and opened by agent_core.py), so every agent gives the job's pods the same pair.
What stays local is the files' mode: the process runtime writes the plugins' files with the default
mode, and ssh refuses a private key others can read, so the private files are created 0600 (in an
owner-only directory) before the runtime writes them; it replaces their content, not their mode.
"""

from __future__ import annotations

from pathlib import Path

from contracts.job_plugins import ssh
from contracts.objects import Job


def prepare_private_files(job: Job, pod_dir: Path) -> None:
    """Create the job's ssh private files under `pod_dir` owner-only (nothing without the plugin)."""
    for relative in ssh.private_files(job):
        _private_file(pod_dir / relative)


def _private_file(path: Path) -> None:
    """An owner-only file at `path` (its content, if any, kept), in an owner-only directory."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
