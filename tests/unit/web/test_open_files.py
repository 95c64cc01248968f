"""The open-files limit is raised at start-up (each websocket session is a file descriptor)."""

from __future__ import annotations

import logging
import resource
from collections.abc import Iterator

import pytest

from switchboard.web.open_files import raise_open_files_limit


@pytest.fixture
def low_soft_limit() -> Iterator[int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 600:
        pytest.skip("the hard open-files limit of this machine is too low to test raising the soft one")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        yield hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_low_soft_limit_is_raised_to_the_hard_limit_and_logged(
    low_soft_limit: int, caplog: pytest.LogCaptureFixture
) -> None:
    hard = low_soft_limit
    wanted = 500
    with caplog.at_level(logging.INFO, logger="switchboard"):
        before, after = raise_open_files_limit(wanted)
    assert (before, after) == (256, wanted)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (wanted, hard)
    assert "open-files limit raised from 256 to 500" in caplog.text


def test_the_limit_is_never_lowered(low_soft_limit: int) -> None:
    assert raise_open_files_limit(100) == (256, 256)
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 256


@pytest.mark.slow  # a process of its own
def test_the_hard_limit_caps_the_raise(low_soft_limit: int) -> None:
    hard = low_soft_limit
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit to cap at")
    assert raise_open_files_limit(hard + 1000) == (256, hard)
