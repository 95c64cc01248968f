"""The registries' client and cache against the registry double (real HTTP on 127.0.0.1, the
v0.1 API with server.json entries): paging with the cursor, search, only active entries, a cache
asked at most every 5 minutes, a registry that is down serving its last answer (and saying how
old it is), and answers that do not fit refused."""

from __future__ import annotations

import json

import pytest

from switchboard.errors import NotFound
from switchboard.registries import Limits, RegistryCatalogue, RegistryClient, RegistryUnavailable
from switchboard.registries.entries import BadRegistryData
from tests.support.registry_double import RegistryDouble, remote_server


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def registry():
    with RegistryDouble() as double:
        yield double


def names(listing):
    return sorted(e.name for e in listing.entries)


async def test_every_page_is_read_with_the_cursor_and_the_search_goes_to_the_registry(registry):
    for i in range(5):
        registry.publish(remote_server(f"com.example/weather-{i}"))
    registry.publish(remote_server("com.example/calendar"))
    client = RegistryClient(registry.base_url, limits=Limits(page_size=2))
    fetched = await client.list("weather")
    assert sorted(e.name for e in fetched.entries) == [f"com.example/weather-{i}" for i in range(5)]
    lists = [q for path, q in registry.requests if path == "/v0.1/servers"]
    assert [q.get("cursor") for q in lists] == [None, "2", "4"]
    assert all(q["search"] == "weather" and q["limit"] == "2" and q["version"] == "latest" for q in lists)
    assert not fetched.truncated


async def test_a_listing_longer_than_the_page_limit_is_cut_and_says_so(registry):
    for i in range(7):
        registry.publish(remote_server(f"com.example/s{i}"))
    fetched = await RegistryClient(registry.base_url, limits=Limits(page_size=2, max_pages=2)).list("")
    assert len(fetched.entries) == 4 and fetched.truncated
    assert registry.list_requests() == 2


async def test_entries_whose_status_is_not_active_are_not_offered(registry):
    registry.publish(remote_server("com.example/live"))
    registry.publish(remote_server("com.example/old"), status="deprecated")
    registry.publish(remote_server("com.example/gone"), status="deleted")
    catalogue = RegistryCatalogue([registry.base_url])
    assert names(await catalogue.search("")) == ["com.example/live"]
    with pytest.raises(NotFound):
        await catalogue.entry("com.example/old")
    assert (await catalogue.entry("com.example/live")).server.version == "1.0.0"


async def test_only_the_latest_version_is_listed(registry):
    registry.publish(remote_server("com.example/tool", version="1.0.0"))
    registry.publish(remote_server("com.example/tool", version="2.0.0"))
    listing = await RegistryCatalogue([registry.base_url]).search("tool")
    assert [(e.name, e.server.version) for e in listing.entries] == [("com.example/tool", "2.0.0")]


async def test_the_cache_asks_each_registry_at_most_every_five_minutes(registry):
    registry.publish(remote_server("com.example/first"))
    clock = Clock()
    catalogue = RegistryCatalogue([registry.base_url], clock=clock)
    assert names(await catalogue.search("")) == ["com.example/first"]
    registry.publish(remote_server("com.example/second"))
    clock.now += 299
    assert names(await catalogue.search("")) == ["com.example/first"]  # from the cache
    assert registry.list_requests() == 1
    clock.now += 2
    assert names(await catalogue.search("")) == ["com.example/first", "com.example/second"]
    assert registry.list_requests() == 2


async def test_many_searches_at_once_make_one_request(registry):
    import asyncio

    registry.publish(remote_server("com.example/one"))
    catalogue = RegistryCatalogue([registry.base_url])
    listings = await asyncio.gather(*(catalogue.search("one") for _ in range(10)))
    assert all(names(listing) == ["com.example/one"] for listing in listings)
    assert registry.list_requests() == 1


async def test_a_registry_that_is_down_serves_its_last_answer_and_says_how_old_it_is(registry):
    registry.publish(remote_server("com.example/kept"))
    clock = Clock()
    catalogue = RegistryCatalogue([registry.base_url], clock=clock)
    fresh = await catalogue.search("")
    assert fresh.registries[0].ok and fresh.registries[0].stale_since is None and fresh.registries[0].age_s == 0
    registry.down = True
    clock.now += 400
    stale = await catalogue.search("")
    assert names(stale) == ["com.example/kept"]
    state = stale.registries[0]
    assert not state.ok and "HTTP 503" in (state.error or "")
    assert state.stale_since == clock.now and state.age_s == 400
    clock.now += 10  # within the retry interval: not asked again, still stale since the failure
    again = (await catalogue.search("")).registries[0]
    assert again.stale_since == clock.now - 10 and again.age_s == 410
    assert registry.list_requests() == 2
    registry.down = False
    clock.now += 30
    back = (await catalogue.search("")).registries[0]
    assert back.ok and back.stale_since is None and back.age_s == 0


async def test_a_registry_down_from_the_start_says_so_and_offers_nothing(registry):
    registry.down = True
    listing = await RegistryCatalogue([registry.base_url]).search("")
    assert listing.entries == [] and listing.registries[0].fetched_at is None
    assert "HTTP 503" in (listing.registries[0].error or "")
    with pytest.raises(RegistryUnavailable):
        await RegistryCatalogue([registry.base_url]).entry("com.example/anything")


async def test_an_unreachable_registry_is_a_state_not_a_crash():
    with RegistryDouble() as gone:
        url = gone.base_url
    listing = await RegistryCatalogue([url], limits=Limits(timeout_s=2)).search("")
    assert listing.entries == [] and "could not be reached" in (listing.registries[0].error or "")


async def test_an_oversized_answer_is_refused_and_the_last_good_one_stays(registry):
    registry.publish(remote_server("com.example/small"))
    clock = Clock()
    catalogue = RegistryCatalogue([registry.base_url], limits=Limits(max_page_bytes=4096), clock=clock)
    assert names(await catalogue.search("")) == ["com.example/small"]
    registry.padding = 10_000
    clock.now += 301
    listing = await catalogue.search("")
    assert names(listing) == ["com.example/small"]
    assert "over 4096 bytes" in (listing.registries[0].error or "")


@pytest.mark.parametrize(
    "raw,words",
    [
        (b"<html>not json</html>", "not JSON"),
        (b'{"items": []}', "not a ServerList"),
        (b"[1, 2]", "not a ServerList"),
    ],
)
async def test_a_malformed_answer_is_refused(registry, raw, words):
    registry.raw = raw
    with pytest.raises(BadRegistryData, match=words):
        await RegistryClient(registry.base_url).list("")


async def test_entries_that_do_not_fit_server_json_are_left_out_and_counted(registry):
    registry.publish(remote_server("com.example/good"))
    registry.publish(remote_server("no-slash-in-name"))
    registry.publish(remote_server("com.example/long", description="x" * 101))
    registry.publish(remote_server("com.example/bad-url", remotes=[{"type": "streamable-http", "url": "ftp://x"}]))
    registry.publish(remote_server("com.example/bad-type", remotes=[{"type": "websocket", "url": "https://x.example"}]))
    listing = await RegistryCatalogue([registry.base_url]).search("")
    assert names(listing) == ["com.example/good"]
    assert listing.registries[0].skipped == 4


async def test_a_redirect_to_a_private_address_is_refused_by_the_endpoint_policy(registry):
    with RegistryDouble() as elsewhere:  # another origin on 127.0.0.1: a private address
        elsewhere.publish(remote_server("com.example/internal"))
        registry.redirect = f"{elsewhere.base_url}/v0.1/servers"
        listing = await RegistryCatalogue([registry.base_url]).search("")
        assert listing.entries == []
        assert "refused" in (listing.registries[0].error or "") and "private" in listing.registries[0].error
        assert elsewhere.requests == []


async def test_redirects_within_the_registry_are_followed_a_few_times_not_forever(registry):
    registry.publish(remote_server("com.example/moved"))
    registry.redirect = f"{registry.base_url}/v0.1/servers?limit=100&version=latest"
    # the double redirects every list request; a loop of redirects ends after three
    with pytest.raises(RegistryUnavailable, match="redirected more than 3 times"):
        await RegistryClient(registry.base_url).list("")
    assert registry.list_requests() == 4


async def test_the_latest_version_of_one_entry_is_looked_up_by_its_encoded_name(registry):
    registry.publish(remote_server("io.github.someone/weather", version="1.0.0"))
    registry.publish(remote_server("io.github.someone/weather", version="1.1.0"))
    entry = await RegistryCatalogue([registry.base_url]).entry("io.github.someone/weather")
    assert entry.server.version == "1.1.0" and entry.registry == registry.base_url
    assert ("/v0.1/servers/io.github.someone/weather/versions/latest", {}) in registry.requests


async def test_the_first_registry_that_knows_an_entry_answers(registry):
    with RegistryDouble() as second:
        second.publish(remote_server("com.example/only-here"))
        catalogue = RegistryCatalogue([registry.base_url, second.base_url])
        assert (await catalogue.entry("com.example/only-here")).registry == second.base_url
        listing = await catalogue.search("")
        assert [s.url for s in listing.registries] == [registry.base_url, second.base_url]
        with pytest.raises(NotFound):
            await catalogue.entry("com.example/nowhere")


def test_the_double_speaks_the_documented_shapes(registry):
    import httpx

    registry.publish(remote_server("com.example/shape"))
    body = httpx.get(f"{registry.base_url}/v0.1/servers", params={"limit": 1}).json()
    assert set(body) == {"servers", "metadata"} and body["metadata"]["count"] == 1
    item = body["servers"][0]
    assert set(item) == {"server", "_meta"}
    assert item["_meta"]["io.modelcontextprotocol.registry/official"]["status"] == "active"
    assert json.dumps(item["server"]).startswith(
        '{"$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/'
    )
    missing = httpx.get(f"{registry.base_url}/v0.1/servers/com.example%2Fnone/versions/latest")
    assert missing.status_code == 404 and missing.json() == {"error": "Server not found"}


def test_the_registries_come_from_a_comma_separated_variable(monkeypatch):
    from switchboard.settings import Settings

    assert Settings(_env_file=None).registry_urls == ["https://registry.modelcontextprotocol.io"]
    monkeypatch.setenv("SWITCHBOARD_REGISTRY_URLS", " https://a.example/ , https://b.example/base")
    assert Settings(_env_file=None).registry_urls == ["https://a.example", "https://b.example/base"]
    monkeypatch.setenv("SWITCHBOARD_REGISTRY_URLS", "")
    assert Settings(_env_file=None).registry_urls == []


async def test_many_new_searches_at_once_reach_the_registry_a_few_at_a_time(registry):
    import asyncio

    registry.publish(remote_server("com.example/one"))
    registry.delay_s = 0.2
    catalogue = RegistryCatalogue([registry.base_url])
    listings = await asyncio.gather(*(catalogue.search(f"o{'n' * i}") for i in range(12)))
    assert registry.list_requests() == 12 and 1 < registry.most_in_flight <= 4
    assert names(listings[1]) == ["com.example/one"]


async def test_an_entry_looked_up_for_an_install_that_does_not_fit_is_refused_as_bad_data(registry):
    registry.publish(remote_server("com.example/broken", remotes=[{"type": "streamable-http", "url": "ftp://x"}]))
    with pytest.raises(BadRegistryData, match=r"does not fit server\.json at 'remotes\.0\.url'") as refused:
        await RegistryCatalogue([registry.base_url]).entry("com.example/broken")
    assert refused.value.status == 400
    registry.padding = 3 * 1024 * 1024
    registry.publish(remote_server("com.example/huge"))
    with pytest.raises(BadRegistryData, match="over 2097152 bytes"):
        await RegistryCatalogue([registry.base_url]).entry("com.example/huge")
