"""The detached supervisor process behind `lahar up -d`."""

from __future__ import annotations

import argparse
import asyncio
import sys

from services.cli.stack.layout import lahar_home
from services.cli.stack.supervisor import Supervisor
from services.cli.stack.up_options import add_up_options, stack_specs


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m services.cli.stack")
    parser.add_argument("--home")
    parser.add_argument("--sim-nodes", type=int, default=0)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--standbys", action="store_true")
    parser.add_argument("--ha", action="store_true")
    parser.add_argument("--no-auth", action="store_true")
    parser.add_argument("--no-tls", action="store_true")
    add_up_options(parser)
    args = parser.parse_args()
    home = lahar_home(args.home)
    standbys = args.standbys or args.ha  # a cluster that survives a server's loss wants standbys too
    specs = stack_specs(home, args, standbys=standbys)
    # --no-auth leaves everything open as before; --no-tls drops only TLS
    tls = not (args.no_auth or args.no_tls)
    return asyncio.run(Supervisor(home, specs, ha=args.ha, secure=not args.no_auth, tls=tls).run())


if __name__ == "__main__":
    sys.exit(main())
