"""The load and soak benchmarks' figures (bench/measure.py): percentiles by nearest
rank, the least-squares slope of a series' tail, the ramp's knee, and what /proc says of this very
process."""

from __future__ import annotations

import math
import os

from bench.measure import children, knee, percentile, sample_process, slope, tail_slope


def test_percentile_takes_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert math.isnan(percentile([], 0.5))


def test_slope_of_a_line_is_its_gradient_and_of_too_few_points_zero() -> None:
    assert slope([0, 1, 2, 3], [5, 7, 9, 11]) == 2.0
    assert slope([1], [3]) == 0.0
    assert slope([2, 2], [1, 5]) == 0.0


def test_tail_slope_leaves_out_the_warm_up() -> None:
    runs = [0, 25, 50, 75, 100, 125]
    rss = [100, 180, 200, 200, 200, 200]  # grows while warming up, then flat
    assert slope(runs, rss) > 0
    assert tail_slope(runs, rss) == 0.0


def test_sample_process_reads_this_process() -> None:
    sample = sample_process(os.getpid())
    assert sample.rss_kb > 0 and sample.anon_kb > 0 and sample.fds >= 3 and sample.threads >= 1
    assert sample.cpu_seconds > 0
    assert all(state != "Z" for _, state in children(os.getpid()))


def test_knee_is_the_last_step_that_kept_up() -> None:
    steps = [(50, 50, 0.02), (100, 99, 0.05), (150, 120, 0.4), (200, 140, 3.0)]
    assert knee(steps, p99_limit=1.0) == (100, 150)  # 150 offered, 120 achieved: fell behind
    assert knee(steps[:2], p99_limit=1.0) == (100, None)
    assert knee([(50, 50, 2.0)], p99_limit=1.0) == (None, 50)
