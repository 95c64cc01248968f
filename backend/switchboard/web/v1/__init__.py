"""The OpenAI-compatible door (`/v1/models`, `/v1/chat/completions`): its routes (`door.py`),
its request (`request.py`) and its answers (`response.py`)."""
