"""The sandbox origin where MCP Apps and HTML artifacts run (`origin.py`), the theme artifacts
get (`artifact_theme.py`) and the limits on its CSP reports (`csp_reports.py`)."""
