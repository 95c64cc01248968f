"""The page handles every kind of event the server sends, in one table: app.js's `HANDLERS`,
read from the running page, against the server's event union (chat/events.py). A kind the
server gains without a handler in the page fails here, as a door that does not match it fails
mypy (`assert_never`)."""

from __future__ import annotations

from typing import get_args

from switchboard.chat.events import ServerEvent


def server_kinds() -> set[str]:
    return {model.model_fields["type"].default for model in get_args(ServerEvent)}


def page_kinds(page) -> set[str]:
    # The page's own module (the same URL: the same instance, not a second copy of the page).
    return set(
        page.evaluate(
            """async () => {
                const src = document.querySelector('script[type="module"][src*="/static/app.js"]').src;
                return Object.keys((await import(src)).HANDLERS);
            }"""
        )
    )


def test_every_kind_of_server_event_has_its_handler_in_the_pages_one_table(page):
    kinds = server_kinds()
    assert len(kinds) == len(get_args(ServerEvent)) and "token" in kinds
    handled = page_kinds(page)
    assert kinds - handled == set(), "the page has no handler for these kinds of the server's events"
    assert handled - kinds == set(), "the page handles kinds the server never sends"
