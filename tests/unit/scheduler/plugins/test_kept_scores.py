"""KeptScores (services/scheduler/core/plugins/kept_scores.py): a row is computed once per request until
its node changes, as candidates ask for it; many due rows go to the vectorised computation at once; only
the requests used last are kept. The work is counted, not timed."""

from __future__ import annotations

import numpy as np

from services.scheduler.core.plugins.kept_scores import MAX_KEPT, ONE_BY_ONE_ROWS, KeptScores


class Scorer:
    """Scores row r as key * 1000 + r + 0.5 * (the row's changes), counting what it was asked for."""

    def __init__(self) -> None:
        self.changes = np.zeros(500, dtype=np.int64)
        self.one: list[int] = []  # rows computed one by one
        self.together: list[list[int]] = []  # rows computed in one vectorised call

    def take(self, kept: KeptScores, key: int, candidates: range | list[int]) -> list[float]:
        rows = np.array(list(candidates), dtype=np.intp)

        def compute_rows(asked: np.ndarray) -> np.ndarray:
            self.together.append(asked.tolist())
            return key * 1000.0 + asked + 0.5 * self.changes[asked]

        def compute_one(row: int) -> float:
            self.one.append(row)
            return key * 1000.0 + row + 0.5 * float(self.changes[row])

        return kept.take(key, rows, compute_rows, compute_one).tolist()

    def change(self, kept: KeptScores, row: int) -> None:
        self.changes[row] += 1
        kept.changed(row)

    def asked(self) -> list[int]:
        rows = [*self.one, *(row for call in self.together for row in call)]
        self.one, self.together = [], []
        return sorted(rows)


def test_a_row_is_computed_once_until_its_node_changes() -> None:
    kept, scorer = KeptScores(500), Scorer()
    assert scorer.take(kept, 1, range(10)) == [1000.0 + r for r in range(10)]
    assert scorer.asked() == list(range(10))
    assert scorer.take(kept, 1, range(10)) == [1000.0 + r for r in range(10)]
    assert scorer.asked() == []  # nothing changed: every score kept
    scorer.change(kept, 3)
    scorer.change(kept, 300)  # not a candidate: left until asked for
    assert scorer.take(kept, 1, range(10))[3] == 1003.5
    assert scorer.asked() == [3]
    assert scorer.take(kept, 1, range(5, 16)) == [1000.0 + r for r in range(5, 16)]
    assert scorer.asked() == list(range(10, 16))  # the rows no call had asked for
    assert scorer.take(kept, 1, [300])[0] == 1300.5
    assert scorer.asked() == [300]


def test_each_request_keeps_its_own_scores() -> None:
    kept, scorer = KeptScores(500), Scorer()
    scorer.take(kept, 1, range(4))
    scorer.take(kept, 2, range(4))
    assert scorer.asked() == [0, 0, 1, 1, 2, 2, 3, 3]
    scorer.change(kept, 2)
    assert scorer.take(kept, 2, range(4)) == [2000.0, 2001.0, 2002.5, 2003.0]
    assert scorer.take(kept, 1, range(4)) == [1000.0, 1001.0, 1002.5, 1003.0]
    assert scorer.asked() == [2, 2]


def test_few_due_rows_are_computed_one_by_one_and_many_together() -> None:
    kept, scorer = KeptScores(500), Scorer()
    scorer.take(kept, 1, range(ONE_BY_ONE_ROWS))
    assert (len(scorer.one), scorer.together) == (ONE_BY_ONE_ROWS, [])
    scorer.asked()
    scorer.take(kept, 1, range(ONE_BY_ONE_ROWS, 3 * ONE_BY_ONE_ROWS))
    assert (scorer.one, scorer.together) == ([], [list(range(ONE_BY_ONE_ROWS, 3 * ONE_BY_ONE_ROWS))])


def test_only_the_requests_used_last_are_kept() -> None:
    kept, scorer = KeptScores(500), Scorer()
    for key in range(MAX_KEPT):
        scorer.take(kept, key, range(3))
    scorer.take(kept, 0, range(3))  # key 0 used again: key 1 is now the least recently used
    scorer.asked()
    scorer.take(kept, MAX_KEPT, range(3))  # one request too many: key 1 goes
    assert scorer.asked() == [0, 1, 2]
    scorer.take(kept, 0, range(3))
    assert scorer.asked() == []
    assert scorer.take(kept, 1, range(3)) == [1000.0, 1001.0, 1002.0]
    assert scorer.asked() == [0, 1, 2]  # computed anew
