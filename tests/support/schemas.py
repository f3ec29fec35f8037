"""The checked-in contracts (contracts/schema/, contracts/asyncapi.yaml) as JSON Schema validators, with
references between files resolved from the files themselves, as a producer in another language would."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

import contracts

CONTRACTS = Path(contracts.__file__).resolve().parent


def load(path: str | Path) -> Any:
    """A checked-in contract file, by its path relative to contracts/."""
    text = (CONTRACTS / path).read_text(encoding="utf-8")
    return yaml.safe_load(text) if str(path).endswith(".yaml") else json.loads(text)


def _retrieve(uri: str) -> Resource[Any]:
    file = Path(url2pathname(urlsplit(uri).path))
    return Resource.from_contents(load(file.relative_to(CONTRACTS)))


REGISTRY: Registry[Any] = Registry(retrieve=_retrieve)  # type: ignore[call-arg]


def validator(schema: dict[str, Any], located_at: str) -> Draft202012Validator:
    """A validator of `schema` whose relative references resolve from contracts/<located_at>."""
    return Draft202012Validator({**schema, "$id": (CONTRACTS / located_at).as_uri()}, registry=REGISTRY)


@functools.cache
def file_validator(path: str) -> Draft202012Validator:
    return validator(load(path), path)


def problems(path: str, instance: Any) -> list[str]:
    """Every way `instance` breaks the schema in contracts/<path>, [] when it fits."""
    return [error.message for error in file_validator(path).iter_errors(instance)]
