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
from api.ui.pages import PageRoute, render
from domain.oversight.read_log import Read, read_target
from projections.oversight_report import oversight_report
from projections.report_formats import FORMATS, to_html
from projections.report_lists import FIGURES, count_of, figure_list
from service.services import Services

router = APIRouter(route_class=PageRoute)
PRESETS = {"1": "last 24 hours", "7": "last 7 days", "30": "last 30 days", "90": "last 90 days"}
FILTERS = ("days", "since", "until", "graph_id")
QUERY = (*FILTERS, "format", "figure")
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
        (name, figure.label, count_of(report, name), dict(query, figure=name))
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
    services.read_models.catch_up_to_head()
    rows = figure_list(
        services.read_models.db,
        name,
        since=chosen["since"],
        until=chosen["until"],
        graph_id=chosen["graph_id"],
        now=now,
    )
    read = Read("report", read_target("dashboard/list", query_of(request)), "ui")
    record_reads(services, viewer.principal, read)
    query = {k: v for k, v in request.query_params.items() if k in FILTERS and v}
    return render(
        request,
        "dashboard_list.html",
        viewer=viewer,
        chosen=chosen,
        figure=FIGURES[name],
        name=name,
        rows=rows,
        query=query,
    )


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
