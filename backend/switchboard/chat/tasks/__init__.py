"""Background tasks (MCP Tasks): the poller that follows the stored tasks this process holds
(`poller.py`) and the board where tasks meet their owners' pages (`board.py`)."""
