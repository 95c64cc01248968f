"""One tool call, from the model or an app: the runner every call passes (`runner.py`:
authorize, trust, hooks, approval, call, record), the arguments the host fills in (`host_args.py`,
`file_choice.py`), the questions it asks (`approvals.py`, `asks.py`), its result and audit record
(`results.py`, `audit.py`), a call run as a background task (`background.py`), and what a call
that a turn's end left open says happened (`unfinished.py`)."""
