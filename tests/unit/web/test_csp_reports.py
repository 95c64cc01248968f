"""`POST /csp-report` on the sandbox origin takes no sign-in: what one client (or many) can make
it write to the log is limited (web/sandbox/csp_reports.py), and it answers without saying what it kept."""

from __future__ import annotations

import json
import logging

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from switchboard.settings import Settings
from switchboard.web.sandbox.csp_reports import WINDOW_S, CspReportLimiter
from switchboard.web.sandbox.origin import SandboxMiddleware, SandboxPolicy

SANDBOX = {"host": "sandbox.localhost:8000", "content-type": "application/csp-report"}


def reporter(address: str) -> TestClient:
    policy = SandboxPolicy.from_settings(Settings(_env_file=None))  # type: ignore[call-arg]
    return TestClient(SandboxMiddleware(Starlette(), policy), client=(address, 40000))


def report(uri: str, directive: str = "img-src") -> bytes:
    return json.dumps({"csp-report": {"violated-directive": directive, "blocked-uri": uri}}).encode()


def logged(caplog: pytest.LogCaptureFixture, event: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "event", None) == event]


@pytest.fixture
def caplog_web(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger="switchboard.web")
    return caplog


def test_one_client_is_rate_limited(caplog_web):
    with reporter("203.0.113.7") as http:
        answers = [
            http.post("/csp-report", content=report(f"https://x.example/{n}"), headers=SANDBOX) for n in range(40)
        ]
    limited = CspReportLimiter().per_client
    assert [a.status_code for a in answers] == [204] * limited + [429] * (40 - limited)
    assert answers[-1].headers["retry-after"] == "60"
    assert len(logged(caplog_web, "app_csp_violation")) == limited


def test_another_address_is_not_held_back_by_a_flooding_one(caplog_web):
    policy = SandboxPolicy.from_settings(Settings(_env_file=None))  # type: ignore[call-arg]
    sandbox = SandboxMiddleware(Starlette(), policy)
    with (
        TestClient(sandbox, client=("203.0.113.7", 1)) as flood,
        TestClient(sandbox, client=("198.51.100.2", 1)) as other,
    ):
        flooding = [
            flood.post("/csp-report", content=report("https://x.example/"), headers=SANDBOX) for _ in range(100)
        ]
        assert flooding[-1].status_code == 429
        assert other.post("/csp-report", content=report("https://y.example/"), headers=SANDBOX).status_code == 204
    uris = [r.uri for r in logged(caplog_web, "app_csp_violation")]  # type: ignore[attr-defined]
    assert uris == ["https://x.example/", "https://y.example/"]


def test_a_repeated_report_is_logged_once_and_still_answered_204(caplog_web):
    with reporter("203.0.113.7") as http:
        answers = [
            http.post("/csp-report", content=report("https://evil.example/beacon?q=1"), headers=SANDBOX)
            for _ in range(5)
        ]
    assert [a.status_code for a in answers] == [204] * 5
    [only] = logged(caplog_web, "app_csp_violation")
    assert only.uri == "https://evil.example/beacon"  # type: ignore[attr-defined]


def test_what_one_client_writes_is_capped_in_bytes(caplog_web):
    limiter = CspReportLimiter()
    long_uri = "https://x.example/" + "a" * 300  # cut to 200 characters when logged
    with reporter("203.0.113.7") as http:
        answers = [http.post("/csp-report", content=report(long_uri + str(n)), headers=SANDBOX) for n in range(20)]
    assert {a.status_code for a in answers} == {204}
    written = sum(len(r.directive) + len(r.uri) for r in logged(caplog_web, "app_csp_violation"))  # type: ignore[attr-defined]
    assert 0 < written <= limiter.bytes_per_client
    assert len(logged(caplog_web, "app_csp_violation")) < 20


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_limits_start_afresh_each_minute_and_the_dropped_are_counted():
    clock = Clock()
    limiter = CspReportLimiter(per_client=2, overall=3, clock=clock)
    assert [limiter.admit("a") for _ in range(3)] == [True, True, False]
    assert limiter.take("a", "img-src", "https://1.example") and not limiter.take("a", "img-src", "https://1.example")
    assert limiter.take("b", "img-src", "https://2.example") and limiter.take("c", "img-src", "https://3.example")
    assert not limiter.take("d", "img-src", "https://4.example"), "three logged a minute across every client"
    assert limiter.roll() == 0, "the minute is not over"
    clock.now += WINDOW_S
    assert limiter.roll() == 3, "one refused, one repeat, one over the overall count"
    assert limiter.admit("a") and limiter.take("a", "img-src", "https://1.example"), "a new minute"
    assert limiter.roll() == 0


def test_the_clients_remembered_are_bounded():
    limiter = CspReportLimiter(per_client=1, clients=3, clock=Clock())
    for address in ("a", "b", "c", "d"):
        assert limiter.admit(address)
    assert not limiter.admit("d") and not limiter.admit("c")
    assert limiter.admit("a"), "the quietest was forgotten: it starts afresh"
