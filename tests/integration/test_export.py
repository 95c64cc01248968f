"""The Markdown export as a user downloads it: tool calls under the answer, one blank line
between blocks, no signed file link and no address of the user's, other branches indicated,
and the file named by the conversation's title."""

from __future__ import annotations

import json
import re

from tests.support.harness import double_model, make_settings, running_app, toolbox_entry, until, write_config
from tests.support.llm_double import TextReply, ToolCall, ToolCallReply


def chat(ws, content, **extra):
    ws.send_json({"type": "chat", "content": content, **extra})
    return until(ws, "message_done")


def test_the_markdown_export_reads_right_and_keeps_private_links_out(tmp_path, llm):
    llm.reset()
    write_config(
        tmp_path / "defaults",
        servers={"toolbox": toolbox_entry(approval="never")},
        models=[double_model(llm)],
        default_model="double",
    )
    with running_app(make_settings(tmp_path)) as (client, _):
        upload = client.post("/api/files", files={"file": ("notes.txt", b"some notes", "text/plain")}).json()
        llm.enqueue(
            ToolCallReply([ToolCall("toolbox_fetch", "{}"), ToolCall("toolbox_whoami", "{}")]),
            TextReply("Done: I looked at your file."),
        )
        with client.websocket_connect("/ws") as ws:
            ws.receive_json()
            first = chat(ws, "read my notes", files=[upload["id"]])
            conversation_id = first[-1]["conversation_id"]
            llm.enqueue(TextReply("A second answer."))
            chat(ws, "and now?")
            llm.enqueue(TextReply("An answer to the edit."))
            chat(ws, "and now, please?", edit_of=chat_user_id(client, conversation_id, "and now?"))
        stored = client.get(f"/api/conversations/{conversation_id}").json()
        fetched = next(m for m in stored["messages"] if m.get("tool") == "toolbox_fetch")
        assert "/api/files/" in json.dumps(fetched["arguments"]), "the host filled in a signed link"
        client.patch(f"/api/conversations/{conversation_id}", json={"title": "Notes: Q3 / plan"})
        answer = client.get(f"/api/conversations/{conversation_id}/export", params={"format": "md"})
        whole = client.get(f"/api/conversations/{conversation_id}/export", params={"format": "json"})
        exported = next(m for m in whole.json()["messages"] if m.get("tool") == "toolbox_fetch")
        assert f"/api/artifacts/{upload['id']}?download=true" in json.dumps(exported["arguments"])
        assert "/api/files/" not in whole.text and "s=" not in whole.text  # no signed link leaves in a download
        assert client.get(f"/api/artifacts/{upload['id']}", params={"download": "true"}).content == b"some notes"
    text = answer.text
    disposition = answer.headers["content-disposition"]
    assert 'filename="Notes Q3 plan.md"' in disposition and "filename*=UTF-8''Notes%20Q3%20plan.md" in disposition
    assert "/api/files/" not in text and "dev@localhost" not in text and "s=" not in text
    assert "(attached file notes.txt)" in text and "user=(you)" in text
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[:5] == [
        "# Notes: Q3 / plan",
        "## You",
        "## Assistant",
        "### Tool `toolbox_fetch` (failed)",
        "### Tool `toolbox_whoami` (ok)",
    ], headings
    assert text.index("### Tool `toolbox_whoami`") < text.index("Done: I looked at your file.")
    assert "\n\n\n" not in text and text.endswith("\n") and not text.endswith("\n\n")
    for heading in headings[1:]:
        assert f"\n\n{heading}\n\n" in text, heading
    assert "- attached: notes.txt\n\n" in text
    assert "this is version 2 of 2" in text and "An answer to the edit." in text and "A second answer." not in text


def chat_user_id(client, conversation_id, content):
    messages = client.get(f"/api/conversations/{conversation_id}").json()["messages"]
    return next(m["id"] for m in messages if m["role"] == "user" and m["content"] == content)


def test_an_untitled_or_symbol_only_title_still_gives_a_safe_name(tmp_path):
    from datetime import UTC, datetime

    from switchboard.chat.views.markdown import export_filename
    from switchboard.store import Conversation

    def named(title):
        now = datetime.now(UTC)
        return export_filename(Conversation("c1", "a@b", title, None, None, (), None, 0, now, now), "md")

    assert named("../../etc/passwd") == ("etc passwd.md", "etc passwd.md")
    assert named("???") == ("conversation.md", "conversation.md")
    assert named("Café \u00e9t\u00e9 \u65e5\u672c") == ("Cafe ete.md", "Café été 日本.md")
    assert not re.search(r'[\r\n"]', named('a"\r\nb')[0])
