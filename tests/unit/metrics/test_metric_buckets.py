"""Log-scale buckets: every value lands in a bucket that holds it, percentiles read back."""

from __future__ import annotations

from tickwheel.metrics.buckets import BUCKETS, bounds, bucket_of, midpoint, percentile


def test_every_value_lands_in_the_bucket_whose_bounds_hold_it() -> None:
    values = [*range(0, 5000), *(2**e + d for e in range(13, 30) for d in (-1, 0, 1))]
    for ms in values:
        low, high = bounds(bucket_of(ms))
        assert low <= max(ms, 0) < high, ms


def test_buckets_grow_with_the_value() -> None:
    found = [bucket_of(ms) for ms in range(0, 100_000, 7)]
    assert found == sorted(found)


def test_a_bucket_reports_within_an_eighth_of_the_value() -> None:
    for ms in range(1, 2_000_000, 997):
        assert abs(midpoint(bucket_of(ms)) - ms) <= ms / 8, ms


def test_negative_and_huge_values_are_kept_at_the_ends() -> None:
    assert bucket_of(-40) == 0
    assert bucket_of(0) == 0
    assert bucket_of(2**40) == BUCKETS - 1


def test_percentiles_read_from_counts() -> None:
    tens, thousands = bucket_of(10), bucket_of(1000)
    assert percentile({}, 0.5) is None
    assert percentile({tens: 99, thousands: 1}, 0.5) == midpoint(tens)
    assert percentile({tens: 99, thousands: 1}, 0.99) == midpoint(tens)
    assert percentile({tens: 98, thousands: 2}, 0.99) == midpoint(thousands)
    assert percentile({bucket_of(0): 3}, 0.99) == 0.0
