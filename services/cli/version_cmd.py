"""`lahar version` (vcctl's `version`): this client's version and the API versions it reads and writes."""

from __future__ import annotations

import argparse
import platform
import sys
from importlib import metadata

from contracts.objects import API_VERSIONS, OLDER_API_VERSIONS
from services.cli import output


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    version = sub.add_parser("version", help="this lahar's version and the API versions it speaks")
    version.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    version.set_defaults(handler=run_version)


def version_info() -> dict[str, object]:
    try:
        lahar = metadata.version("lahar")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        lahar = "unknown"
    kinds = {kind: [current, *OLDER_API_VERSIONS.get(kind, ())] for kind, current in API_VERSIONS.items()}
    return {"version": lahar, "python": platform.python_version(), "api_versions": kinds}


def run_version(args: argparse.Namespace) -> int:
    info = version_info()
    if args.output != "text":
        output.dump(info, args.output, sys.stdout)  # the stream now (a test may have replaced it)
        return output.EXIT_OK
    print(f"{'Version:':<16}{info['version']}")
    print(f"{'Python:':<16}{info['python']}")
    kinds = info["api_versions"]
    assert isinstance(kinds, dict)
    for kind, versions in sorted(kinds.items()):
        print(f"{kind + ':':<16}{', '.join(versions)}")
    return output.EXIT_OK
