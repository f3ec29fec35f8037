"""`lahar queue create|list|get|operate|delete`, with vcctl's flags (reference: vcctl queue).

`operate -a open|close` issues a Command (OpenQueue, CloseQueue); `-a update -w N` changes the weight
(vcctl's merge patch of spec.weight), decided by admission against the stored queue.
"""

from __future__ import annotations

import argparse
import json
import sys

from contracts.objects import API_VERSIONS, Queue
from services.cli import output
from services.cli.cluster_cmd import command, run
from shared.client import LaharClient

LIST_COLUMNS = ("Name", "Weight", "State", "Parent", "Inqueue", "Pending", "Running", "Unknown", "Completed")


def register(sub: argparse._SubParsersAction) -> None:
    queue = sub.add_parser("queue", help="vcctl's queue commands: create, list, get, operate, delete")
    verbs = queue.add_subparsers(dest="verb", required=True, metavar="VERB")

    create = command(verbs, "create", "create a queue")
    create.add_argument("-n", "--name", default="test")
    create.add_argument("-w", "--weight", type=int, default=1)
    create.add_argument("-S", "--state", default="Open", choices=("Open", "Closed"))
    create.add_argument("-p", "--parent", default="", help="the parent queue (hierarchical queues)")
    create.add_argument("--dry-run", action="store_true")
    create.set_defaults(handler=create_queue)

    list_p = command(verbs, "list", "list queues with their PodGroup counts")
    list_p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    list_p.set_defaults(handler=list_queues)

    get = command(verbs, "get", "show one queue")
    get.add_argument("-n", "--name", required=True)
    get.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    get.set_defaults(handler=get_queue)

    operate = command(verbs, "operate", "open or close a queue, or change its weight")
    operate.add_argument("-n", "--name", required=True)
    operate.add_argument("-a", "--action", required=True, choices=("open", "close", "update"))
    operate.add_argument("-w", "--weight", type=int, default=0, help="the new weight (update; > 0)")
    operate.set_defaults(handler=operate_queue)

    delete = command(verbs, "delete", "delete a queue")
    delete.add_argument("-n", "--name", required=True)
    delete.set_defaults(handler=delete_queue)


def queue_manifest(name: str, weight: int, state: str, parent: str) -> dict[str, object]:
    spec: dict[str, object] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    return {
        "apiVersion": API_VERSIONS["Queue"],
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def create_queue(args: argparse.Namespace) -> int:
    text = json.dumps(queue_manifest(args.name, args.weight, args.state, args.parent))

    async def body(client: LaharClient) -> int:
        answer = await client.apply(text, dry_run=args.dry_run, source="queue create")
        code = output.report([("queue create", answer)], "quiet")
        if answer.accepted:
            print(f"create queue {args.name} successfully" + (" (dry run)" if answer.dry_run else ""))
        return code

    return run(args, body)


def queue_row(queue: Queue) -> list[object]:
    s = queue.status
    parent = queue.parent or ("" if queue.meta.name == "root" else "root")
    return [
        queue.meta.name,
        queue.weight,
        s.state,
        parent,
        s.inqueue,
        s.pending,
        s.running,
        s.unknown,
        s.completed,
    ]


def _show(queues: list[Queue], fmt: str, *, single: bool) -> None:
    if fmt != "table":
        output.dump(output.document(queues[0]) if single else output.listing(queues), fmt)
    else:
        print(output.table(LIST_COLUMNS, (queue_row(q) for q in queues)))


def list_queues(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        queues = [q for q in await client.list("queue") if isinstance(q, Queue)]
        _show(queues, args.output, single=False)
        return output.EXIT_OK

    return run(args, body)


def get_queue(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        queue = await client.get("queue", args.name)
        if not isinstance(queue, Queue):
            print(f"lahar queue get: queue {args.name} not found", file=sys.stderr)
            return output.EXIT_REFUSED
        _show([queue], args.output, single=True)
        return output.EXIT_OK

    return run(args, body)


def operate_queue(args: argparse.Namespace) -> int:
    if args.action == "update" and args.weight <= 0:
        print("lahar queue operate: -a update needs -w WEIGHT > 0", file=sys.stderr)
        return output.EXIT_USAGE

    async def body(client: LaharClient) -> int:
        weight = args.weight if args.action == "update" else None
        answer = await client.command(args.action, args.name, target_kind="queue", weight=weight)
        code = output.report([("queue operate", answer)], "quiet")
        if answer.accepted:
            print(f"{args.action} queue {args.name} successfully")
        return code

    return run(args, body)


def delete_queue(args: argparse.Namespace) -> int:
    async def body(client: LaharClient) -> int:
        answer = await client.delete("queue", args.name)
        code = output.report([("queue delete", answer)], "quiet")
        if answer.accepted:
            print(f"delete queue {args.name} successfully")
        return code

    return run(args, body)
