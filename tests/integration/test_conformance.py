"""The MCP conformance suite's client scenarios, run through the host: the suite starts its
test server (and authorization server), Switchboard signs a user in through its own routes
and calls the server's tools; every check of these scenarios must pass.  A few scenarios
only (the whole list: `uv run python tests/conformance/run.py`): the browser sign-in with a
client ID metadata document, a pre-registered client, step-up to more scopes (the user presses
Connect again), and the client_credentials grant.

Needs npm (the suite and Node 22 are installed on first use); skipped without it, except
under CI=true, where a missing suite is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conformance import run

SCENARIOS = ["auth/basic-cimd", "auth/pre-registration", "auth/scope-step-up", "auth/client-credentials-basic"]


@pytest.fixture(scope="module")
def suite():
    try:
        if shutil.which("npm") is None:
            raise RuntimeError("npm is missing")
        return run.install()
    except (RuntimeError, subprocess.CalledProcessError, SystemExit) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the MCP conformance suite could not be installed: {exc}")
        pytest.skip(f"the MCP conformance suite could not be installed: {exc}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_switchboard_passes_the_scenario(suite, scenario):
    passed, total, failed = run.run_scenario(suite, "switchboard", scenario)
    assert total > 0 and not failed, f"{scenario}: {passed}/{total}, failed: {failed}"
