"""The run's count of semantic comparisons, gathered from the test reports (so pytest-xdist workers'
comparisons reach the controller with their reports) and printed as one terminal summary line."""

from __future__ import annotations

from collections.abc import Iterable

RECORD_KEY = "simkernel_semantic"  # name of the user property each comparison is recorded under


class Tally:
    """Comparisons, how many fell below their threshold, the lowest passing score, model loads per process,
    comparisons of non-Latin text on an English-only model (per model)."""

    def __init__(self) -> None:
        self.comparisons = 0
        self.below = 0
        self.lowest_passing: tuple[float, float] | None = None  # (score, its threshold)
        self.loads: dict[int, int] = {}  # process id -> models loaded by the plugin in it
        self.english_only: dict[str, int] = {}  # model -> its comparisons of non-Latin text (English-only)

    def add(self, records: Iterable[dict]) -> None:
        for record in records:
            self.comparisons += 1
            if not record["passed"]:
                self.below += 1
            elif self.lowest_passing is None or record["score"] < self.lowest_passing[0]:
                self.lowest_passing = (record["score"], record["threshold"])
            if record.get("note"):
                self.english_only[record["model"]] = self.english_only.get(record["model"], 0) + 1
            pid = record["pid"]
            self.loads[pid] = max(self.loads.get(pid, 0), record["loads"])

    def summary_line(self) -> str | None:
        """``None`` when no test compared texts."""
        if not self.comparisons:
            return None
        parts = [
            f"simkernel semantic: {_plural(self.comparisons, 'comparison')}, {self.below} below the threshold"
        ]
        if self.lowest_passing is None:
            parts.append("none passed")
        else:
            score, threshold = self.lowest_passing
            parts.append(f"lowest passing score {score:.4f} (threshold {threshold:.4f})")
        loads = sum(self.loads.values())
        parts.append(f"{_plural(loads, 'model load')} in {_plural(len(self.loads), 'process', 'processes')}")
        if self.english_only:
            parts.append(
                f"{_plural(sum(self.english_only.values()), 'comparison')} of non-Latin text on the English-only {', '.join(sorted(self.english_only))}: those scores are not meaningful, use a multilingual model (see the warnings)"
            )
        return "; ".join(parts)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"
