import pytest

from tests.support.llm_double import LLMDouble


@pytest.fixture(scope="module")
def llm():
    """The HTTP LLM double, one per test module; tests enqueue its replies."""
    with LLMDouble() as double:
        yield double
