"""MCP Apps as the conversation sees them: the bridge an app's calls pass through (`bridge.py`)
and what apps tell the model (`context.py`)."""
