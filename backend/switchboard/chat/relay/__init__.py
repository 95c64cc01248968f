"""Turn control across app processes: the seam between the turn hub and the other processes
(`seam.py`: the protocols and the in-process relay), the typed messages between processes
(`messages.py`), the PostgreSQL relay on LISTEN/NOTIFY (`postgres.py`) and how a turn is
followed from another process (`follow.py`)."""
