"""The terminal client (`switchboard chat`): a client of the HTTP API, with its own arguments."""
