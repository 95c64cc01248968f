"""The operator's rows: servers added in the console, tool trust, share requests, the audit log."""
