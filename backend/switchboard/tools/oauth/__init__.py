"""Users' sign-in to remote MCP servers (OAuth 2.1 on the MCP SDK's client): the flow, the
guard on every URL it makes the host fetch, token storage, DPoP-bound tokens, and the vault
interface through which the tools layer finds users' own credentials."""
