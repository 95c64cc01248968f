"""The LLM client tests run against both of the client's paths to an
OpenAI-compatible endpoint: direct through the openai SDK, and through litellm."""

import pytest

from tests.support.llm_double import LLMDouble

PATHS = ["direct", "litellm"]


@pytest.fixture(params=PATHS)
def path(request):
    return request.param


def path_taken(headers: dict[str, str]) -> str:
    """Which path sent a request, seen on the wire: the direct path is the openai SDK
    (its User-Agent) asking for the plain stream; litellm either asks the SDK for raw
    responses (`x-stainless-raw-response`) or sends with its own HTTP code (its User-Agent)."""
    sdk = headers.get("user-agent", "").startswith("AsyncOpenAI/Python")
    return "direct" if sdk and "x-stainless-raw-response" not in headers else "litellm"


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
