"""The report's two charts over time: decisions by day, and the time-to-decision histogram."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from projections.report_charts import day_chart, histogram_chart, time_chart
from projections.report_formats import to_html

EDGES = (0, 10, 30, 60, 300, 900, 3600, 14400, 86400, None)
NUMBER = r'"([\d.]+)"'
RECT = re.compile(
    rf"<rect x={NUMBER} y={NUMBER} width={NUMBER} height={NUMBER}[^>]*><title>([^<]*)</title>"
)


def bins(*counts: int) -> list[dict[str, Any]]:
    return [
        {"from": low, "to": high, "count": count}
        for (low, high), count in zip(itertools.pairwise(EDGES), counts, strict=True)
    ]


def rects(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Each bar's x, y, width and height, by its tooltip."""
    return {tip: (float(x), float(y), float(w), float(h)) for x, y, w, h, tip in RECT.findall(svg)}


def test_every_bucket_is_a_bar_and_the_open_ended_one_has_a_width():
    svg = histogram_chart(bins(4, 2, 2, 2, 1, 0, 3, 0, 5), 10.0)

    bars = rects(svg)
    assert list(bars) == [
        "under 10 s: 4",
        "10 s to 30 s: 2",
        "30 s to 1 min: 2",
        "1 min to 5 min: 2",
        "5 min to 15 min: 1",
        "15 min to 1 h: 0",
        "1 h to 4 h: 3",
        "4 h to 1 d: 0",
        "1 d or more: 5",
    ]
    assert bars["1 d or more: 5"][2] > 20  # it reaches the next tick, 7 d
    assert bars["1 d or more: 5"][3] == 50.0  # the highest bar
    assert 'class="floor"' in svg
    assert "floor 10 s" in svg


def test_a_count_too_wide_for_its_bar_is_left_to_the_tooltip():
    svg = histogram_chart(bins(0, 0, 123456, 0, 0, 0, 0, 0, 7), 10.0)

    assert "30 s to 1 min: 123456" in svg
    assert ">123456</text>" not in svg  # 30 s to 1 min is about 15 px wide
    assert ">7</text>" in svg


def test_a_histogram_without_answers_says_there_were_none():
    figure = {"median": None, "p90": None, "max": None, "histogram": bins(*[0] * 9)}

    chart = time_chart(figure, 10.0)

    assert "No decisions in the period." in chart
    assert "<svg" not in chart


def test_days_are_columns_on_a_time_axis_with_gaps_for_days_without_decisions():
    busy, quiet = {"approve": 2, "reject": 1, "expired": 0}, {"approve": 1, "expired": 1}
    label = "Decisions over time (UTC days), by kind"

    gap = rects(day_chart({"2025-03-03": busy, "2025-03-05": quiet}, label))
    full = rects(day_chart({"2025-03-03": busy, "2025-03-04": quiet, "2025-03-05": quiet}, label))

    assert gap["2025-03-05: 1 approve"] == full["2025-03-05: 1 approve"]  # placed by date
    assert not any(tip.startswith("2025-03-04") for tip in gap)
    first = gap["2025-03-03: 2 approve"]
    assert gap["2025-03-03: 1 reject"][0] == first[0]  # stacked on the same column
    assert gap["2025-03-03: 1 reject"][1] < first[1]
    assert first[3] == pytest.approx(2 * gap["2025-03-05: 1 approve"][3], abs=0.2)
    assert first[3] + gap["2025-03-03: 1 reject"][3] == pytest.approx(80, abs=0.2)  # the top


def test_the_histogram_is_one_table_of_buckets_on_the_page():
    figure = {"median": 3.5, "p90": 4.0, "max": 4.0, "histogram": bins(2, 0, 0, 0, 0, 0, 0, 0, 0)}
    page = to_html({"period": {"rubber_stamp_seconds": 10.0}, "time_to_decision_seconds": figure})

    assert "<caption>histogram</caption><tr><th>from</th><th>to</th><th>count</th></tr>" in page
    assert 'data-key="time_to_decision_seconds.histogram.8.to">n/a</td>' in page
    assert '<dl class="item">' not in page
