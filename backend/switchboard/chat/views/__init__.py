"""Conversations as people see them: what the HTTP API shows of stored ones (`stored.py`),
Markdown to sanitized HTML (`render.py`, live as an answer streams in `live_render.py`), and
the Markdown export (`markdown.py`, made safe by `markdown_safe.py`)."""
