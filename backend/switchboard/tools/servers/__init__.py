"""The configured MCP servers as running things: how a stdio server is launched (forked from
one pre-imported parent for the bundled ones), the transports, one supervised connection per
server (or per user), and the pool that starts them all and routes calls to them."""
