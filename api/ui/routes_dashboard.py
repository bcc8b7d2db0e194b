"""The Article 14 oversight dashboard: the report of `GET /reports/oversight` as a page,
for a chosen period and graph, with its charts, and downloads as CSV, JSON and HTML."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

from fastapi import APIRouter, Request, Response

from api.http.deps import ServicesDep
from api.http.problems import Problem
from api.http.reads import record_reads
from api.http.routes.audit import MEDIA_TYPES
from api.ui.access import AuditingViewer
from api.ui.forms import page_size
from api.ui.pages import PageRoute, render
from domain.oversight.read_log import Read, read_target
from projections.oversight_report import oversight_report
from projections.report_formats import FORMATS, to_html
from projections.report_lists import (
    FIGURES,
    PAGE_SIZE,
    PARTS,
    UnknownPartError,
    count_of,
    figure_page,
    parts_of,
)
from service.services import Services

router = APIRouter(route_class=PageRoute)
PRESETS = {"1": "last 24 hours", "7": "last 7 days", "30": "last 30 days", "90": "last 90 days"}
FILTERS = ("days", "since", "until", "graph_id")
PART_PARAMS = tuple(sorted({part.param for part in PARTS.values()}))
QUERY = (*FILTERS, "format", "figure", *PART_PARAMS, "after", "limit", "shown")
MAX_PAGE_SIZE = 200
_STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)
_MAIN = re.compile(r"<main>(.*)</main>", re.DOTALL)


def _day(name: str, text: str | None) -> date | None:
    if not text:
        return None
    try:
        day = date.fromisoformat(text)
    except ValueError:
        day = None
    if day is None or not 1900 <= day.year <= 9000:
        msg = f"Invalid {name}: {text!r} is not a date like 2026-03-01 (years 1900 to 9000)"
        raise Problem(422, msg)
    return day


def period(query: Any, now: datetime) -> dict[str, Any]:
    """The period the picker asks for: a preset (days back from now) or from/to dates."""
    start_day, end_day = _day("from", query.get("since")), _day("to", query.get("until"))
    days = query.get("days") or "30"
    if start_day or end_day:
        until = (
            datetime.combine(end_day + timedelta(days=1), datetime.min.time(), UTC)
            if end_day
            else now
        )
        since = (
            datetime.combine(start_day, datetime.min.time(), UTC)
            if start_day
            else until - timedelta(days=30)
        )
        days = ""
    else:
        days = days if days in PRESETS else "30"
        until, since = now, now - timedelta(days=int(days))
    if since >= until:
        raise Problem(422, "Invalid period: 'from' must be on or before 'to'")
    graph_id = (query.get("graph_id") or "").strip() or None
    return {"since": since, "until": until, "days": days, "graph_id": graph_id}


def report_of(services: Services, chosen: dict[str, Any], now: datetime) -> dict[str, Any]:
    services.read_models.catch_up_to_head()
    return oversight_report(
        services.read_models.db,
        since=chosen["since"],
        until=chosen["until"],
        graph_id=chosen["graph_id"],
        now=now,
    )


def embedded(report: dict[str, Any]) -> tuple[str, str]:
    """The report's own HTML page (`to_html`), cut into its style and its content; its
    title becomes a second-level heading under the dashboard's."""
    page = to_html(report)
    style, main = _STYLE.search(page), _MAIN.search(page)
    content = main.group(1) if main else page
    content = content.replace("<h2>", "<h3>").replace("</h2>", "</h3>")
    content = content.replace("<h1>", "<h2>").replace("</h1>", "</h2>")
    return (style.group(1) if style else ""), content


def query_of(request: Request) -> dict[str, str]:
    """The period, graph and format the page was asked for (what its read names)."""
    return {k: v for k, v in request.query_params.items() if k in QUERY}


@router.get("/dashboard")
def dashboard(request: Request, services: ServicesDep, viewer: AuditingViewer) -> Response:
    now = datetime.now(UTC)
    chosen = period(request.query_params, now)
    report = report_of(services, chosen, now)
    record_reads(
        services,
        viewer.principal,
        Read("report", read_target("dashboard", query_of(request)), "ui"),
    )
    style, content = embedded(report)
    query = {k: v for k, v in request.query_params.items() if k in FILTERS and v}
    drills = [
        {
            "name": name,
            "label": figure.label,
            "count": count_of(report, name),
            "params": dict(query, figure=name),
            "parts": _parts(report, name, query),
            "parts_label": PARTS[name].label if name in PARTS else None,
        }
        for name, figure in FIGURES.items()
    ]
    return render(
        request,
        "dashboard.html",
        viewer=viewer,
        chosen=chosen,
        presets=PRESETS,
        graphs=sorted(services.graphs),
        report_style=style,
        report_html=content,
        query=query,
        drills=drills,
    )


@router.get("/dashboard/list")
def drill_down(request: Request, services: ServicesDep, viewer: AuditingViewer) -> Response:
    """The interrupts (or threads) behind one of the dashboard's counts, same filters."""
    now = datetime.now(UTC)
    chosen = period(request.query_params, now)
    name = request.query_params.get("figure", "")
    if name not in FIGURES:
        raise Problem(422, f"Invalid figure {name!r}: one of {', '.join(FIGURES)}")
    part = _part_asked(request, name)
    services.read_models.catch_up_to_head()
    try:
        page = figure_page(
            services.read_models.db,
            name,
            since=chosen["since"],
            until=chosen["until"],
            graph_id=chosen["graph_id"],
            now=now,
            part=part[1] if part else None,
            after=request.query_params.get("after") or None,
            limit=page_size(request.query_params.get("limit"), PAGE_SIZE, MAX_PAGE_SIZE),
        )
    except UnknownPartError as error:
        raise Problem(422, str(error)) from None
    read = Read("report", read_target("dashboard/list", query_of(request)), "ui")
    record_reads(services, viewer.principal, read)
    query = {k: v for k, v in request.query_params.items() if k in FILTERS and v}
    listed = dict(query, figure=name)
    if part:
        listed[part[0]] = part[1]
    if request.query_params.get("limit"):
        listed["limit"] = request.query_params["limit"]
    shown = _shown_before(request.query_params.get("shown"))  # rows on the pages before
    following = dict(listed, after=page.next_cursor or "", shown=str(shown + len(page.rows)))
    return render(
        request,
        "dashboard_list.html",
        viewer=viewer,
        chosen=chosen,
        figure=FIGURES[name],
        name=name,
        part=part,
        rows=page.rows,
        total=page.total,
        start=shown + 1,
        next_params=None if page.next_cursor is None else following,
        first_params=listed if request.query_params.get("after") else None,
        query=query,
    )


def _shown_before(value: str | None) -> int:
    """How many rows the pages before this one listed, which numbers this page's from."""
    try:
        return max(0, int(value or 0))
    except ValueError:
        return 0


def _parts(report: dict[str, Any], name: str, query: dict[str, str]) -> list[dict[str, Any]]:
    """The counts a figure is split into, each with its list's query."""
    part = PARTS.get(name)
    if part is None:
        return []
    return [
        {"value": value, "count": count, "params": dict(query, figure=name, **{part.param: value})}
        for value, count in parts_of(report, name)
    ]


def _part_asked(request: Request, name: str) -> tuple[str, str] | None:
    """(parameter, value) of the part of the figure the list is asked for, if any."""
    part = PARTS.get(name)
    for param in PART_PARAMS:
        value = request.query_params.get(param)
        if value is None:
            continue
        if part is None or part.param != param:
            raise Problem(422, f"Invalid {param}: figure {name!r} is not split by {param}")
        return param, value
    return None


@router.get("/dashboard/download")
def download(request: Request, services: ServicesDep, viewer: AuditingViewer) -> Response:
    now = datetime.now(UTC)
    chosen = period(request.query_params, now)
    kind = request.query_params.get("format", "csv")
    if kind not in FORMATS:
        raise Problem(422, f"Invalid format {kind!r}: csv, json or html")
    report = report_of(services, chosen, now)
    read = Read("report", read_target("dashboard/download", query_of(request)), "ui")
    record_reads(services, viewer.principal, read)
    name = f"oversight-report-{chosen['since']:%Y%m%d}-{chosen['until']:%Y%m%d}.{kind}"
    return Response(
        FORMATS[kind](report),
        media_type=MEDIA_TYPES[kind],
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )
