"""The AsyncAPI 3.0 document of every subject family on the bus: events, intake, plans, quarantined events
and dead letters, the admission and logs request/reply APIs, heartbeats, usage samples. Pure;
contracts/schema_gen.py writes it as contracts/asyncapi.yaml.

Payloads refer to the JSON Schemas under contracts/schema/ (paths relative to contracts/). The document
describes lahar as one application: `send` is what a lahar service publishes, `receive` what one reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts.events import EVENT_TYPES, EventType
from contracts.usage import usage_channel

# the contract's own version: event payloads carry theirs (x-lahar-schema-version, the envelope's
# schema_version); this one changes when a subject or a message other than an event payload does
CONTRACT_VERSION = "1.1.0"
MSGPACK = "application/msgpack"
JSON = "application/json"

_TOKEN = (
    "escaped as one subject token: bytes outside [A-Za-z0-9_-] become %XX (upper-case hex of their UTF-8 "
    "bytes), and a value that is exactly _ is written %5F"
)
_NAMESPACE = f"the object's namespace, or _ for a cluster-scoped object; {_TOKEN}"


def asyncapi() -> dict[str, Any]:
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "lahar",
            "version": CONTRACT_VERSION,
            "description": (
                "Every subject of a lahar control plane on NATS: the event log (JetStream stream "
                "LAHAR_EVENTS), the intake stream (LAHAR_INTAKE), plans (LAHAR_PLANS), quarantined events "
                "(LAHAR_QUARANTINE) and dead letters (LAHAR_DEADLETTER), the admission and logs "
                "request/reply APIs, node heartbeats and node usage samples (core NATS). Payload schemas "
                "are in schema/, generated from contracts/payloads.py and contracts/bus_messages.py; see "
                "README.md."
            ),
        },
        "defaultContentType": JSON,
        "channels": _channels(),
        "operations": _operations(),
    }


def _channels() -> dict[str, Any]:
    kinds = sorted({t.subject_kind for t in EVENT_TYPES.values()})
    return {
        "events": {
            "address": "lahar.ev.{kind}.{producer}.{type}.{namespace}.{name}",
            "title": "The event log",
            "description": (
                "JetStream stream LAHAR_EVENTS; its sequence is the control plane's clock. One subject per "
                "object, writer and event type, so one object's history is lahar.ev.<kind>.*.*.<namespace>."
                "<name>. Every message is an envelope (schema/messages/Envelope.json) as MessagePack whose "
                "payload is its type's schema. Each type has exactly one writer."
            ),
            "parameters": {
                "kind": {"description": "the kind of object the event is about", "enum": kinds},
                "producer": {"description": f"the writer: a service, or node-agent.<agent>; {_TOKEN}"},
                "type": {"description": "the event type", "enum": sorted(EVENT_TYPES)},
                "namespace": {"description": _NAMESPACE},
                "name": {"description": f"the object's name; {_TOKEN}"},
            },
            "messages": {name: _event_message(t) for name, t in sorted(EVENT_TYPES.items())},
        },
        "intake": {
            "address": "lahar.intake.{kind}.{namespace}.{name}",
            "title": "The intake stream",
            "description": (
                "JetStream stream LAHAR_INTAKE (work queue), consumed by admission (durable consumer "
                "admission) exactly as an apply request; the outcome is written as events, an invalid "
                "manifest as one ManifestRejected. See intake.md."
            ),
            "parameters": {
                "kind": {
                    "description": (
                        "the object's kind in lower case: job, queue, podgroup, pod, priorityclass, "
                        "hypernode, command; it routes and names a rejection, admission reads the kind "
                        "from the manifest"
                    )
                },
                "namespace": {"description": _NAMESPACE},
                "name": {"description": f"the object's name; {_TOKEN}"},
            },
            "messages": {"Manifest": _manifest_message("schema/messages/IntakeHeaders.json")},
        },
        "tenantIntake": {
            "address": "lahar.intake.{kind}.{namespace}.{name}.{tenant}",
            "title": "The intake stream, as a tenant publishes to it",
            "description": (
                "The same stream and handling as the intake channel, for a tenant's user (lahar tenant "
                "add): the server lets it publish only in its namespaces and under its own name, and "
                "admission authorizes the manifest as that tenant's; one it may not make (another "
                "namespace, a queue it may not use, a cluster-scoped kind) is moved to LAHAR_DEADLETTER "
                "with reason forbidden and writes nothing to the log. See intake.md."
            ),
            "parameters": {
                "kind": {"description": "as on the intake channel"},
                "namespace": {"description": "one of the tenant's namespaces"},
                "name": {"description": f"the object's name; {_TOKEN}"},
                "tenant": {"description": "the publishing tenant's name (its credentials file names it)"},
            },
            "messages": {"Manifest": _manifest_message("schema/messages/IntakeHeaders.json")},
        },
        "plans": {
            "address": "lahar.plan.{producer}",
            "title": "Plans for the binder",
            "description": (
                "JetStream stream LAHAR_PLANS (work queue): scheduler replicas and the descheduler send "
                "what they decided; the binder checks each plan against its ledger and commits it as "
                "events (PodBound, PodEvicting, PodNominated, PodGroupStatusChanged) or rejects it "
                "(PlanRejected)."
            ),
            "parameters": {"producer": {"description": f"the replica that sent the plan; {_TOKEN}"}},
            "messages": {
                "Plan": {
                    "name": "Plan",
                    "summary": "binds, evictions and PodGroup statuses of one session's statement",
                    "contentType": MSGPACK,
                    "headers": _ref("schema/messages/PlanHeaders.json"),
                    "payload": _ref("schema/messages/Plan.json"),
                }
            },
        },
        "quarantine": {
            "address": "lahar.quarantine.{service}.{seq}",
            "title": "Quarantined events",
            "description": (
                "JetStream stream LAHAR_QUARANTINE (kept 30 days, at most 256 MiB): an event of the log a "
                "service set aside instead of applying it (not an event, a payload its type does not "
                "allow, or its core raised on it). One record per service and sequence: the event stays "
                "in the log and is set aside again at every replay. See docs/reliability.md."
            ),
            "parameters": {
                "service": {"description": f"the service that set the event aside; {_TOKEN}"},
                "seq": {"description": "the event's sequence in LAHAR_EVENTS"},
            },
            "messages": {"QuarantineRecord": _json_message("QuarantineRecord", "an event set aside", None)},
        },
        "reconcileFailures": {
            "address": "lahar.quarantine.{service}.reconcile.{key}",
            "title": "Failing reconciles",
            "description": (
                "JetStream stream LAHAR_QUARANTINE: a key (a job, a node, a queue) whose reconcile raised in "
                "a service's core, written when the key starts failing. Its outputs wait for a retry with "
                "backoff; every other key goes on. See docs/reliability.md."
            ),
            "parameters": {
                "service": {"description": f"the service whose core raised; {_TOKEN}"},
                "key": {"description": "a digest of the key (the record holds the key itself)"},
            },
            "messages": {
                "ReconcileFailure": _json_message("ReconcileFailure", "a key whose reconcile raised", None)
            },
        },
        "deadLetters": {
            "address": "lahar.dead.{stream}.{consumer}",
            "title": "Dead letters",
            "description": (
                "JetStream stream LAHAR_DEADLETTER (kept 30 days, at most 256 MiB): an intake manifest or "
                "a plan its consumer could not handle after a few tries, moved off its work queue with its "
                "subject, headers and bytes; its sender was answered (ManifestRejected, PlanRejected) "
                "where one could be. See docs/reliability.md."
            ),
            "parameters": {
                "stream": {"description": "the work queue it was taken from: LAHAR_INTAKE or LAHAR_PLANS"},
                "consumer": {"description": "the durable consumer that gave up on it: admission or binder"},
            },
            "messages": {
                "DeadLetter": _json_message("DeadLetter", "a message no consumer could handle", None)
            },
        },
        "apiApply": _api_channel("apply", _manifest_message("schema/messages/ApiHeaders.json")),
        "apiCreate": _api_channel(
            "create", _json_message("CreateRequest", "create an object (the controllers' verb)")
        ),
        "apiDelete": _api_channel("delete", _json_message("DeleteRequest", "delete an object")),
        "apiCommand": _api_channel(
            "command", _json_message("CommandRequest", "a Volcano command on a Job or Queue")
        ),
        "apiTenantApply": _api_channel(
            "tenant.apply",
            _json_message("TenantApplyRequest", "register or replace a tenant (operator only)"),
        ),
        "apiTenantDelete": _api_channel(
            "tenant.delete", _json_message("TenantDeleteRequest", "remove a tenant (operator only)")
        ),
        "apiTenantList": _api_channel(
            "tenant.list", _json_message("TenantListRequest", "list the tenants (operator only)")
        ),
        "apiReply": {
            "address": None,
            "title": "Admission's replies",
            "description": "the requester's reply subject (a NATS inbox)",
            "messages": {
                "ApiReply": {
                    "name": "ApiReply",
                    "summary": "what admission decided and wrote",
                    "contentType": JSON,
                    "payload": _ref("schema/messages/ApiReply.json"),
                }
            },
        },
        "heartbeats": {
            "address": "lahar.hb.{agent}",
            "title": "Node heartbeats",
            "description": (
                "Core NATS, every 2 s from each node agent, one message for up to 2,000 of its nodes; the "
                "binder judges liveness by its own clock on receipt (NodeNotReady, NodeReady)."
            ),
            "parameters": {"agent": {"description": f"the node agent's id; {_TOKEN}"}},
            "messages": {
                "Heartbeat": {
                    "name": "Heartbeat",
                    "summary": "these nodes are alive",
                    "contentType": JSON,
                    "payload": _ref("schema/messages/Heartbeat.json"),
                }
            },
        },
        "usage": usage_channel(),
        "logs": {
            "address": "lahar.logs.{namespace}.{pod}",
            "title": "A pod's container output",
            "description": (
                "Core NATS request/reply, answered only by the node agent that ran the pod (no reply: no "
                "agent knows it)."
            ),
            "parameters": {
                "namespace": {"description": f"the pod's namespace; {_TOKEN}"},
                "pod": {"description": f"the pod's name; {_TOKEN}"},
            },
            "messages": {"LogsRequest": _json_message("LogsRequest", "read from an offset", headers=None)},
        },
        "logsReply": {
            "address": None,
            "title": "Log chunks",
            "description": "the requester's reply subject (a NATS inbox)",
            "messages": {
                "LogsReply": {
                    "name": "LogsReply",
                    "summary": "the log from the offset, or why not",
                    "contentType": JSON,
                    "payload": _ref("schema/messages/LogsReply.json"),
                }
            },
        },
    }


def _event_message(event_type: EventType) -> dict[str, Any]:
    name = event_type.name
    return {
        "name": name,
        "summary": event_type.summary,
        "contentType": MSGPACK,
        "headers": _ref("schema/messages/EventHeaders.json"),
        "payload": {
            "allOf": [
                _ref("schema/messages/Envelope.json"),
                {
                    "type": "object",
                    "properties": {
                        "type": {"const": name},
                        "schema_version": {"const": event_type.version},
                        "payload": _ref(f"schema/events/{name}.json"),
                    },
                },
            ]
        },
        "x-lahar-writer": event_type.writer,
        "x-lahar-schema-version": event_type.version,
    }


def _manifest_message(headers: str) -> dict[str, Any]:
    return {
        "name": "Manifest",
        "summary": "Kubernetes/Volcano manifests as kubectl or vcctl take them",
        "description": (
            "UTF-8 YAML or JSON text in Kubernetes field names (apiVersion, kind, metadata, spec), possibly "
            "several documents separated by ---, admitted all or none; at most 1 MiB and 1000 documents, "
            "no YAML aliases. Not the codec's form of schema/objects/: admission parses and defaults it."
        ),
        "contentType": "application/yaml",
        "headers": _ref(headers),
        "payload": {"type": "string"},
    }


def _json_message(
    name: str, summary: str, headers: str | None = "schema/messages/ApiHeaders.json"
) -> dict[str, Any]:
    message = {
        "name": name,
        "summary": summary,
        "contentType": JSON,
        "payload": _ref(f"schema/messages/{name}.json"),
    }
    if headers is not None:
        message["headers"] = _ref(headers)
    return message


def _api_channel(verb: str, message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "address": f"lahar.api.{verb}",
        "title": f"Admission API: {verb}",
        "description": "Core NATS request/reply, queue group admission; the reply is an ApiReply.",
        "messages": {message["name"]: dict(message)},
    }


def _operations() -> dict[str, Any]:
    events = [_ref(f"#/channels/events/messages/{name}") for name in sorted(EVENT_TYPES)]
    operations: dict[str, Any] = {
        "writeEvent": _operation("send", "events", "each service writes the event types it owns", events),
        "readEvents": _operation("receive", "events", "services fold the event types they read", events),
        "admitFromIntake": _operation(
            "receive", "intake", "admission consumes manifests", [_ref("#/channels/intake/messages/Manifest")]
        ),
        "sendPlan": _operation("send", "plans", "a scheduler replica sends a plan", [_plan()]),
        "commitPlan": _operation("receive", "plans", "the binder commits or rejects a plan", [_plan()]),
        "quarantineEvent": _operation(
            "send",
            "quarantine",
            "every event-sourced service records the events it sets aside",
            [_ref("#/channels/quarantine/messages/QuarantineRecord")],
        ),
        "recordReconcileFailure": _operation(
            "send",
            "reconcileFailures",
            "every event-sourced service records the keys whose reconcile raised",
            [_ref("#/channels/reconcileFailures/messages/ReconcileFailure")],
        ),
        "moveToDeadLetters": _operation(
            "send",
            "deadLetters",
            "admission (intake) and the binder (plans) move what they cannot handle",
            [_ref("#/channels/deadLetters/messages/DeadLetter")],
        ),
        "sendHeartbeat": _operation(
            "send", "heartbeats", "a node agent", [_ref("#/channels/heartbeats/messages/Heartbeat")]
        ),
        "watchHeartbeats": _operation(
            "receive", "heartbeats", "the binder", [_ref("#/channels/heartbeats/messages/Heartbeat")]
        ),
        "sendUsage": _operation(
            "send", "usage", "a node agent", [_ref("#/channels/usage/messages/UsageReport")]
        ),
        "watchUsage": _operation(
            "receive", "usage", "scheduler replicas", [_ref("#/channels/usage/messages/UsageReport")]
        ),
        "serveLogs": {
            **_operation("receive", "logs", "a node agent", [_ref("#/channels/logs/messages/LogsRequest")]),
            "reply": {
                "channel": _ref("#/channels/logsReply"),
                "messages": [_ref("#/channels/logsReply/messages/LogsReply")],
            },
        },
    }
    for verb, message in (
        ("Apply", "Manifest"),
        ("Create", "CreateRequest"),
        ("Delete", "DeleteRequest"),
        ("Command", "CommandRequest"),
        ("TenantApply", "TenantApplyRequest"),
        ("TenantDelete", "TenantDeleteRequest"),
        ("TenantList", "TenantListRequest"),
    ):
        channel = f"api{verb}"
        operations[f"admission{verb}"] = {
            **_operation("receive", channel, "admission", [_ref(f"#/channels/{channel}/messages/{message}")]),
            "reply": {
                "channel": _ref("#/channels/apiReply"),
                "messages": [_ref("#/channels/apiReply/messages/ApiReply")],
            },
        }
    return operations


def _plan() -> dict[str, str]:
    return _ref("#/channels/plans/messages/Plan")


def _operation(action: str, channel: str, summary: str, messages: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "action": action,
        "channel": _ref(f"#/channels/{channel}"),
        "summary": summary,
        "messages": messages,
    }


def _ref(target: str) -> dict[str, str]:
    return {"$ref": target}
