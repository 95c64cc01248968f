"""The chat page names every module its script imports in `<link rel="modulepreload">`, so the
browser fetches them all at once instead of finding the imports a level at a time (a round trip
per level on a real network)."""

from __future__ import annotations

MODULES = """() => {
  const loaded = performance.getEntriesByType('resource')
    .map((entry) => new URL(entry.name))
    .filter((url) => url.pathname.startsWith('/static/') && url.pathname.endsWith('.js') && !url.search)
    .map((url) => url.pathname);
  const preloaded = [...document.querySelectorAll('link[rel=modulepreload]')]
    .map((link) => new URL(link.href).pathname);
  return { loaded: [...new Set(loaded)].sort(), preloaded: preloaded.sort() };
}"""


def test_every_module_the_page_imports_is_preloaded_and_nothing_else(page):
    found = page.evaluate(MODULES)
    assert len(found["preloaded"]) > 20  # app.js imports about 34 modules, directly or not
    assert found["loaded"] == found["preloaded"]
