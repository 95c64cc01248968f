"""The MCP conformance suite's client scenarios, run through the host: the suite starts its
test server (and authorization server), Switchboard signs a user in through its own routes
and calls the server's tools; every check of these scenarios must pass.  A few scenarios
only (the whole list: `uv run python tests/conformance/run.py [--suite VERSION]`): on suite
0.1.16 the browser sign-in with a client ID metadata document, a pre-registered client, step-up
to more scopes (the user presses Connect again), and the client_credentials grant; on suite
0.2.0-alpha.12 the MCP 2026-07-28 scenarios and those of the skills and DPoP extensions, below.

Needs npm (the suite and Node 22 are installed on first use); skipped without it, except
under CI=true, where a missing suite is a failure."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conformance import run

SCENARIOS = (
    [
        ("0.1.16", scenario)
        for scenario in (
            "auth/basic-cimd",
            "auth/pre-registration",
            "auth/scope-step-up",
            "auth/client-credentials-basic",
        )
    ]
    + [
        # MCP 2026-07-28 (suite 0.2.0-alpha.12): multi round-trip requests, the standard and custom HTTP
        # headers (values that would break a header are encoded; tools with a bad annotation dropped),
        # per-request _meta, and JSON Schema 2020-12 schemas ($ref included) kept as the server wrote them.
        ("0.2.0-alpha.12", scenario)
        for scenario in (
            "sep-2322-client-request-state",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "request-metadata",
            "json-schema-ref-no-deref",
            "json-schema-2020-12-preservation",
        )
    ]
    + [
        # The skills extension (SEP-2640): no file read before a skill is used; a SKILL.md whose digest, size
        # or frontmatter differs from the listing is refused, and so are the skill's other files.
        ("0.2.0-alpha.12", scenario)
        for scenario in (
            "sep-2640-client-no-prefetch",
            "sep-2640-client-verify-digest",
            "sep-2640-client-verify-size",
            "sep-2640-client-verify-frontmatter",
        )
    ]
    + [
        # DPoP-bound tokens (SEP-1932, RFC 9449): a proof on the token request, `Authorization: DPoP` and a fresh
        # proof on every MCP request; with the nonce variant, the token endpoint's and the MCP server's
        # use_dpop_nonce answered by one retry with the nonce.
        ("0.2.0-alpha.12", scenario)
        for scenario in ("auth/dpop", "auth/dpop-nonce")
    ]
)


def suite(version: str):
    try:
        if shutil.which("npm") is None:
            raise RuntimeError("npm is missing")
        return run.install(version)
    except (RuntimeError, subprocess.CalledProcessError, SystemExit) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the MCP conformance suite {version} could not be installed: {exc}")
        pytest.skip(f"the MCP conformance suite {version} could not be installed: {exc}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("version", "scenario"), SCENARIOS)
def test_switchboard_passes_the_scenario(version, scenario):
    passed, total, failed = run.run_scenario(suite(version), "switchboard", scenario)
    assert total > 0 and not failed, f"{scenario}: {passed}/{total}, failed: {failed}"
