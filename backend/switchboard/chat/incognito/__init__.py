"""Incognito conversations: never stored; held in this process's memory between turns
(`memory.py`), or by the page with their state sealed by the server (`sealed.py`)."""
