"""`lahar quarantine` and `lahar dead-letters`: what the services set aside (docs/reliability.md, "Poison
messages: quarantine and dead letters"), read from LAHAR_QUARANTINE and LAHAR_DEADLETTER."""

from __future__ import annotations

import argparse
import contextlib
from typing import Any

import msgspec

from contracts.bus_messages import DeadLetter
from services.cli import output
from services.cli.cluster_cmd import command, run
from shared.bus.poison import read_dead_letters, read_quarantine, read_reconcile_failures
from shared.client import LaharClient

_ERROR_CHARS = 80  # a table cell; -o json has the whole text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    quarantine = command(sub, "quarantine", "events of the log the services set aside instead of applying")
    quarantine.add_argument("--service", help="only this service's records (e.g. job-controller)")
    quarantine.add_argument(
        "--reconciles",
        action="store_true",
        help="list the keys whose reconcile raised in a service's core instead (a job, a node, ...)",
    )
    quarantine.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    quarantine.set_defaults(handler=run_quarantine)

    letters = command(sub, "dead-letters", "intake manifests and plans that could not be handled")
    letters.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    letters.set_defaults(handler=run_dead_letters)


def run_quarantine(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        if args.reconciles:
            return await _reconcile_failures(client, args)
        records = [record for _, record in await read_quarantine(client.bus, args.service)]
        if args.output != "table":
            output.dump([msgspec.to_builtins(r) for r in records], args.output)
            return output.EXIT_OK
        cols = ("TIME", "SERVICE", "SEQ", "TYPE", "REASON", "SUBJECT", "ERROR")
        rows = [
            (output.utc(r.time), r.service, r.seq, r.type, r.reason, r.subject, _short(r.error_type, r.error))
            for r in records
        ]
        print(output.table(cols, rows))
        return output.EXIT_OK

    return run(args, body)


async def _reconcile_failures(client: LaharClient, args: argparse.Namespace) -> int:
    failures = [failure for _, failure in await read_reconcile_failures(client.bus, args.service)]
    if args.output != "table":
        output.dump([msgspec.to_builtins(f) for f in failures], args.output)
        return output.EXIT_OK
    cols = ("SINCE", "SERVICE", "SEQ", "KEY", "ERROR")
    rows = [(output.utc(f.time), f.service, f.seq, f.key, _short(f.error_type, f.error)) for f in failures]
    print(output.table(cols, rows))
    return output.EXIT_OK


def run_dead_letters(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        letters = [letter for _, letter in await read_dead_letters(client.bus)]
        if args.output != "table":
            output.dump([_plain(letter) for letter in letters], args.output)
            return output.EXIT_OK
        cols = ("TIME", "STREAM", "SEQ", "CONSUMER", "REASON", "TRIES", "ANSWER", "SUBJECT", "ERROR")
        rows = [
            (
                output.utc(d.time),
                d.stream,
                d.seq,
                d.consumer,
                d.reason,
                d.deliveries,
                d.answer,
                d.subject,
                _short(d.error_type, d.error),
            )
            for d in letters
        ]
        print(output.table(cols, rows))
        return output.EXIT_OK

    return run(args, body)


def _plain(letter: DeadLetter) -> dict[str, Any]:
    """As stored (data in base64), plus the data as text when it is text (a manifest)."""
    plain: dict[str, Any] = msgspec.to_builtins(letter)
    with contextlib.suppress(UnicodeDecodeError):
        plain["text"] = letter.data.decode("utf-8")
    return plain


def _short(error_type: str, error: str) -> str:
    text = f"{error_type}: {error}".replace("\n", " ")
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 3] + "..."
