"""Fixed log-scale buckets of milliseconds, and percentiles read back from them.

Each octave (1-2 ms, 2-4 ms, ...) is cut into four buckets, so a percentile read from
the counts is within about 12% of the truth whatever the scale, and a second's counts
from many nodes merge by adding them up. The bucket of a value is integer arithmetic
on its bits: cheap enough to take on the hot path once per task.
"""

from __future__ import annotations

from collections.abc import Mapping

STEPS_PER_OCTAVE = 4
MAX_OCTAVE = 30  # 2**30 ms is about 12 days: anything later shares the last bucket
BUCKETS = 1 + STEPS_PER_OCTAVE * (MAX_OCTAVE + 1)  # bucket 0 holds values below 1 ms


def bucket_of(ms: int) -> int:
    """The bucket of a non-negative duration; negative ones (clock skew) count as 0."""
    if ms < 1:
        return 0
    octave = ms.bit_length() - 1
    if octave > MAX_OCTAVE:
        return BUCKETS - 1
    step = ((ms << 2) >> octave) & 3  # the two bits below the leading one
    return 1 + STEPS_PER_OCTAVE * octave + step


def bounds(bucket: int) -> tuple[float, float]:
    """The values a bucket holds: from its low bound up to (not including) its high one."""
    if bucket == 0:
        return (0.0, 1.0)
    octave, step = divmod(bucket - 1, STEPS_PER_OCTAVE)
    base = float(2**octave)
    return (base * (1 + step / 4), base * (1 + (step + 1) / 4))


def midpoint(bucket: int) -> float:
    """What a bucket reports for a percentile: the middle of its range (0 for < 1 ms)."""
    if bucket == 0:
        return 0.0
    low, high = bounds(bucket)
    return (low + high) / 2


def percentile(counts: Mapping[int, int], q: float) -> float | None:
    """The `q` quantile (0 < q <= 1) of the values counted per bucket; None when empty."""
    total = sum(counts.values())
    if total == 0:
        return None
    rank = q * total  # the smallest bucket whose cumulative count reaches the rank
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            return midpoint(bucket)
    return midpoint(max(counts))
