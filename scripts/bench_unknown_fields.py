"""What the unknown-field check (contracts/known_fields.py) costs per manifest, against parsing it
(docs/benchmarks.md, "Strict manifests").

    PYTHONPATH=. python scripts/bench_unknown_fields.py [MANIFEST]

For one Job manifest (by default Volcano's TensorFlow example, two tasks): the check alone on the loaded
document, parse_object alone, and parse_documents from text with the check (strict) and without it
(ignore), the text as YAML and as JSON (what producers on the bus send). Microseconds per document,
medians of 5 interleaved rounds, each the best of 3 runs of 1,000 documents (100 for YAML, a hundred
times slower to read).
"""

from __future__ import annotations

import json
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import yaml

from contracts.known_fields import unknown_manifest_fields
from contracts.parse import parse_documents, parse_object

ROUNDS = 5
DEFAULT = "examples/volcano/integrations/tensorflow/dist-mnist/tf-dist-mnist-example.yaml"


def best(fn: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def main(path: str) -> None:
    text = Path(path).read_text()
    doc = yaml.safe_load(text)
    as_json = json.dumps(doc)
    assert not unknown_manifest_fields(doc, path), "the manifest has unknown fields"
    cases: dict[str, Callable[[], object]] = {
        "the check alone": lambda: unknown_manifest_fields(doc, path),
        "parse_object alone": lambda: parse_object(doc, path),
        "parse_documents, JSON, strict": lambda: parse_documents(as_json, path),
        "parse_documents, JSON, ignore": lambda: parse_documents(as_json, path, validate="ignore"),
        "parse_documents, YAML, strict": lambda: parse_documents(text, path),
        "parse_documents, YAML, ignore": lambda: parse_documents(text, path, validate="ignore"),
    }
    rounds: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(ROUNDS):  # interleaved, so that a busy spell on the machine touches every case
        for name, fn in cases.items():
            rounds[name].append(best(fn, 100 if "YAML" in name else 1000))
    for name, times in rounds.items():
        print(f"{name:32} {statistics.median(times):9.1f} µs")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else DEFAULT)
