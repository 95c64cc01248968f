"""What users add: their own servers, the MCP registries they browse, and asking to share a server."""
