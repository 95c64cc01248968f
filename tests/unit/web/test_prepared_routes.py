"""A new process prepares its routes at start, so its first request does not: FastAPI works out a
route's parameters and models the first time a request is matched against it, which made the first
page after a start or deploy wait 0.4-0.6 s while the first request walked every route."""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import httpx

from switchboard.web.app import create_app
from tests.support.harness import make_settings


def _model_fields_made(stats: pstats.Stats) -> int:
    return sum(
        calls[1]
        for (path, _, name), calls in stats.stats.items()  # type: ignore[attr-defined]
        if name == "create_model_field" and Path(path).parts[-2:] == ("fastapi", "utils.py")
    )


async def test_the_first_request_after_start_builds_no_route_models(tmp_path):
    app = create_app(make_settings(tmp_path), prepare=True)  # as `switchboard serve` builds it
    async with app.router.lifespan_context(app):
        await app.state.routes_prepared
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
            profile = cProfile.Profile()
            profile.enable()
            first = await client.get("/")
            profile.disable()
    assert first.status_code == 200
    assert _model_fields_made(pstats.Stats(profile)) == 0


async def test_without_preparing_the_first_request_would_build_them(tmp_path):
    """The measure above can see the work: an app whose routes were never prepared builds them
    on its first request."""
    app = create_app(make_settings(tmp_path))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        profile = cProfile.Profile()
        profile.enable()
        await client.get("/healthz")
        profile.disable()
    assert _model_fields_made(pstats.Stats(profile)) > 0
