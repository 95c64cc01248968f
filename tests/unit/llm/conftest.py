"""The LLM client tests run against both of the client's paths to an
OpenAI-compatible endpoint: direct through the openai SDK, and through litellm."""

import pytest

from tests.support.llm_double import LLMDouble

PATHS = ["direct", "litellm"]


@pytest.fixture(params=PATHS)
def path(request):
    return request.param


def path_taken(headers: dict[str, str]) -> str:
    """Which path sent a request, seen on the wire: the direct path says so in its
    User-Agent; litellm sends through the OpenAI SDK or its own HTTP code (their User-Agents)."""
    return "direct" if headers.get("user-agent", "").startswith("Switchboard") else "litellm"


@pytest.fixture
def proves_path(path):
    """After the test: every request the double saw came over the test's path."""
    doubles = []
    yield doubles.append
    for double in doubles:
        assert [path_taken(h) for h in double.request_headers] == [path] * len(double.request_headers)


@pytest.fixture(scope="module")
def running_double():
    """One HTTP LLM double per test module, reset before each test."""
    with LLMDouble() as double:
        yield double


@pytest.fixture
def llm(running_double):
    running_double.reset()
    return running_double
