import pytest

from switchboard.store import open_store


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    """A fresh, empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/data/switchboard.db"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
async def store(store_url):
    opened = await open_store(store_url)
    try:
        yield opened
    finally:
        await opened.close()
