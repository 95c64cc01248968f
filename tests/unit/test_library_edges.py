"""The few places where the host leans on a library's private or internal API, pinned.

Each exists for a measured reason (below); none is covered by the library's compatibility promise,
so an upgrade may move it. These tests fail loudly and name the place to re-check, instead of
letting a changed private method be silently skipped (an override of a renamed method is never
called) or a moved import break at run time.

- `llm/openai_direct.py` streams OpenAI-compatible models over plain HTTP (a fraction of
  litellm's CPU per call, and half the OpenAI SDK's) and must raise what litellm would raise for
  the same answer: it uses litellm's own exception mapping, finish-reason mapping and
  optional-parameter rules (internal modules), and builds the OpenAI SDK's exception for an error
  response the way the SDK's client does (a private method of the SDK, compared below).
- `tools/servers/stdio.py` keeps the MCP SDK's process handling for stdio servers (spawn in its own
  process group, the shutdown sequence, its waits) and replaces only the reader; it calls the
  SDK's helpers for those, and runs the shutdown sequence itself with a shorter grace.
- `tools/oauth/provider.py` subclasses the MCP SDK's `OAuthClientProvider` to authenticate a pre-registered
  client the way the authorization server's metadata says, to refresh a little before expiry,
  and to learn the scopes a step-up needs; the SDK offers no hook for these.
"""

from __future__ import annotations

import importlib
import inspect

import pytest


@pytest.mark.parametrize(
    "module,name",
    [
        ("litellm.litellm_core_utils.core_helpers", "map_finish_reason"),
        ("litellm.litellm_core_utils.exception_mapping_utils", "exception_type"),
        ("litellm.llms.openai.common_utils", "OpenAIError"),
        ("litellm.llms.openai.chat.o_series_transformation", "OpenAIOSeriesConfig"),
        ("litellm.types.utils", "all_litellm_params"),
        ("litellm.utils", "ProviderConfigManager"),
        ("litellm.utils", "get_optional_params"),
    ],
)
def test_the_litellm_internals_the_direct_path_uses_are_there(module, name):
    assert hasattr(importlib.import_module(module), name), (
        f"{module}.{name} is gone: re-check llm/openai_direct.py against this litellm version"
    )


def test_litellm_maps_an_openai_error_as_the_direct_path_expects():
    from litellm import exceptions as lx
    from litellm.litellm_core_utils.exception_mapping_utils import exception_type
    from litellm.llms.openai.common_utils import OpenAIError

    with pytest.raises(lx.RateLimitError):
        exception_type(
            model="gpt-4o-mini",
            original_exception=OpenAIError(status_code=429, message="slow down"),
            custom_llm_provider="openai",
        )


def test_the_mcp_oauth_provider_still_has_the_methods_the_host_overrides():
    from mcp.client.auth import OAuthClientProvider

    from switchboard.tools.oauth import provider as oauth_provider
    from switchboard.tools.oauth import url_guard as oauth_guard

    own_helpers = {"_fit_client_authentication", "_update_expiry", "_check_resource", "_secret_goes_to_its_issuer"}
    ours = [
        cls
        for module in (oauth_provider, oauth_guard)
        for cls in vars(module).values()
        if inspect.isclass(cls)
        and cls.__module__ == module.__name__
        and (issubclass(cls, OAuthClientProvider) or cls is oauth_guard.GuardedAuth)
    ]
    assert len(ours) >= 2, "tools/oauth/provider.py no longer subclasses OAuthClientProvider: update this test"
    for cls in ours:
        for name, member in vars(cls).items():
            if name.startswith("_") and not name.startswith("__") and callable(member) and name not in own_helpers:
                parent = getattr(OAuthClientProvider, name, None)
                assert parent is not None, f"OAuthClientProvider.{name} is gone: {cls.__name__}.{name} is never called"
                assert list(inspect.signature(parent).parameters) == list(inspect.signature(member).parameters), (
                    f"OAuthClientProvider.{name} changed its parameters: re-check {cls.__name__}.{name}"
                )


def test_the_oauth_context_still_computes_token_expiry_where_the_host_replaces_it():
    from mcp.client.auth.oauth2 import OAuthContext

    assert "update_token_expiry" in vars(OAuthContext), (
        "OAuthContext.update_token_expiry is gone: tools/oauth/provider.py refreshes early by replacing it"
    )


@pytest.mark.parametrize(
    "name",
    [
        "_KILL_REAP_TIMEOUT",
        "_WRITER_FLUSH_TIMEOUT",
        "_aclose_all",
        "_close_pipe",
        "_close_subprocess_transport",
        "_create_platform_compatible_process",
        "_drain_stdout",
        "_get_executable_command",
        "_parse_line",
        "_terminate_process_tree",
        "_wait_for_process_exit",
        "close_process_job",
    ],
)
def test_the_mcp_stdio_helpers_the_host_reuses_are_there(name):
    from mcp.client import stdio

    assert hasattr(stdio, name), (
        f"mcp.client.stdio.{name} is gone: re-check tools/servers/stdio.py against this MCP SDK"
    )
