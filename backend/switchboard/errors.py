"""The exception tree of Switchboard.

Third-party errors are translated into this tree once, where the library is
called (litellm errors in ``llm/``, MCP errors in ``tools/``).  The web layer
turns any of these into its wire answer in one place (``web/error_render.py``):
each class carries its ``code`` (the event's), its HTTP ``status`` and its JSON-RPC
``rpc_code`` (an MCP App's request), and nothing else maps errors to statuses or codes
(``http_status``, ``status_for_code``).  ``rpc`` below: -32602 bad params, -32600 not a
request, -32601 no such method, -32000 refused, the rest -32603 (internal).

    SwitchboardError                 code         status  rpc  (what the user sees)
    ├── ConfigError                  internal     500  a config file is wrong
    ├── BadRequest                   bad_request  400  -32602  a malformed client message
    │   ├── NotARequest              bad_request  400  -32600  a body that is no request (not JSON)
    │   ├── TooLarge                 bad_request  413  -32602  a body over the size limit
    │   └── MethodNotAllowed         method_not_allowed 405 -32600  the path answers other methods
    ├── Unauthorized                 unauthorized 401  -32000  no (trusted) identity
    ├── Forbidden                    forbidden    403  -32000  identity known, not allowed
    ├── NotFound                     not_found    404  -32601
    ├── Conflict                     bad_request  409  the id is taken, or the conversation is busy (a turn runs)
    ├── TooMany                      rate_limited 429  a per-user limit is reached (turns, streams at once)
    │   └── RateLimited              rate_limited 429  -32000  too many requests (an MCP App's bridge)
    ├── Cancelled                    cancelled    500  the user pressed Stop
    ├── ToolError                    tool_error   502  a tool call could not run
    │   ├── ToolNotAllowed           forbidden    403  -32000  not in the user's catalogue
    │   │   └── ToolQuarantined      forbidden    403  -32000  not approved by an administrator (reason `quarantined`)
    │   ├── ToolTimeout              timeout      504
    │   ├── ServerUnavailable        tool_error   503  the server is not ready
    │   ├── NeedsAuth                tool_error   502  the user has not connected (signed in to) the server
    │   ├── SignInFailed             tool_error   502  an OAuth sign-in was refused or failed (never the remote answer)
    │   ├── TaskGone                 tool_error   502  the server no longer knows a task (expired or lost)
    │   └── SkillRejected            tool_error   502  a skill's file failed verification against its listing
    ├── StoreError                   internal     500  the conversation store failed a read or write
    │   └── StoreUnavailable         internal     503  the database cannot be reached (names it and what to check)
    └── LLMError                     llm_error    502  the model call failed
        ├── LLMRateLimited           rate_limited 429
        ├── LLMTimeout               timeout      504
        ├── LLMUnavailable           llm_error    502  not configured / no key
        ├── LLMStreamCut             llm_error    502  the answer broke off; the part shown is kept
        └── LLMContextOverflow       llm_error    400  the conversation no longer fits the model
"""

from __future__ import annotations

__all__ = [
    "RPC_INTERNAL",
    "BadRequest",
    "Cancelled",
    "ConfigError",
    "Conflict",
    "Forbidden",
    "LLMContextOverflow",
    "LLMError",
    "LLMRateLimited",
    "LLMStreamCut",
    "LLMTimeout",
    "LLMUnavailable",
    "MethodNotAllowed",
    "NeedsAuth",
    "NotARequest",
    "NotFound",
    "RateLimited",
    "ServerUnavailable",
    "SignInFailed",
    "SkillRejected",
    "StoreError",
    "StoreUnavailable",
    "SwitchboardError",
    "TaskGone",
    "TooLarge",
    "TooMany",
    "ToolError",
    "ToolNotAllowed",
    "ToolQuarantined",
    "ToolTimeout",
    "Unauthorized",
    "http_status",
    "status_for_code",
]


RPC_INTERNAL = -32603  # JSON-RPC's internal error: the server failed (answered with HTTP 502 to an app)


class SwitchboardError(Exception):
    code = "internal"
    status = 500  # the HTTP status of a request this error ends
    rpc_code = RPC_INTERNAL  # the JSON-RPC error code of an MCP App's request this error ends
    action: str | None = None
    reason: str | None = None  # beside the code, why in one word (`quarantined`)

    def __init__(self, message: str, *, action: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if action is not None:
            self.action = action


class ConfigError(SwitchboardError):
    """A config problem, located by file, server or model, and field."""

    def __init__(self, message: str, *, file: str = "", server: str = "", field: str = "", model: str = "") -> None:
        self.file, self.server, self.field, self.model = file, server, field, model
        parts = (
            file,
            f"server '{server}'" if server else "",
            f"model '{model}'" if model else "",
            f"field '{field}'" if field else "",
        )
        where = ", ".join(part for part in parts if part)
        super().__init__(f"{where}: {message}" if where else message)


class BadRequest(SwitchboardError):
    code = "bad_request"
    status = 400
    rpc_code = -32602


class NotARequest(BadRequest):
    """The body is no request at all (not JSON): JSON-RPC's invalid request."""

    rpc_code = -32600


class TooLarge(BadRequest):
    """A request body over its size limit (HTTP 413); the message names the limit."""

    status = 413


class MethodNotAllowed(BadRequest):
    code = "method_not_allowed"
    status = 405
    rpc_code = -32600


class Unauthorized(SwitchboardError):
    code = "unauthorized"
    status = 401
    rpc_code = -32000
    action = "Sign in through your organisation's login page and reload."


class Forbidden(SwitchboardError):
    code = "forbidden"
    status = 403
    rpc_code = -32000


class NotFound(SwitchboardError):
    code = "not_found"
    status = 404
    rpc_code = -32601


class Conflict(SwitchboardError):
    """Something with that id exists already (HTTP 409); on the websocket a `bad_request`."""

    code = "bad_request"
    status = 409


class TooMany(SwitchboardError):
    """A per-user limit is reached (HTTP 429); the message names the limit."""

    code = "rate_limited"
    status = 429


class Cancelled(SwitchboardError):
    code = "cancelled"


class RateLimited(TooMany):
    """An MCP App's requests over their rate (HTTP 429)."""

    rpc_code = -32000


class ToolError(SwitchboardError):
    code = "tool_error"
    status = 502


class ToolNotAllowed(ToolError):
    code = "forbidden"
    status = 403
    rpc_code = -32000


class ToolQuarantined(ToolNotAllowed):
    """The tool is new, changed or blocked, and no administrator approved this definition of it."""

    reason = "quarantined"
    action = "An administrator must review and approve the tool (the admin console's Tools) before it can be used."

    def __init__(self, name: str, state: str = "pending") -> None:
        why = {
            "pending": "is new and has not been approved",
            "changed": "changed since an administrator approved it",
            "blocked": "was blocked by an administrator",
        }.get(state, "is not approved")
        self.state = state
        super().__init__(f"the tool '{name}' {why} (quarantined): an administrator must review it before it is used")


class ToolTimeout(ToolError):
    code = "timeout"
    status = 504


class ServerUnavailable(ToolError):
    status = 503


class NeedsAuth(ToolError):
    """The server needs the user's own credential, which they have not given (or which was refused)."""


class SignInFailed(ToolError):
    """Signing in to a server's authorization server failed or was stopped.  The message says
    which step and why in the host's words: never the remote server's answer."""


class TaskGone(ToolError):
    """The server no longer knows a task the host holds (past its TTL, or the server lost it)."""


class SkillRejected(ToolError):
    """A skill's file does not match the server's listing (size, digest, frontmatter): never used."""


class StoreError(SwitchboardError):
    """A conversation-store read or write failed; the message says what was lost, not the driver's text."""

    action = "Try again in a moment; if it keeps failing, ask your administrator to check the database."


class StoreUnavailable(StoreError):
    """The database cannot be reached; the message names it (never its password) and what to check."""

    status = 503
    action = "Ask your administrator to check that the database is running and SWITCHBOARD_DATABASE_URL is right."


class LLMError(SwitchboardError):
    code = "llm_error"
    status = 502
    action = "Try again, or pick another model."
    retryable = False  # the same request may succeed when sent again (set where the failure is translated)
    retry_after_s: float | None = None  # the provider's Retry-After, in seconds from when it answered


class LLMRateLimited(LLMError):
    code = "rate_limited"
    status = 429
    action = "The model provider is rate-limiting requests; wait a minute and try again."


class LLMTimeout(LLMError):
    code = "timeout"
    status = 504
    action = "The model took too long to answer; try again or pick another model."


class LLMUnavailable(LLMError):
    action = "Pick another model, or ask your administrator to configure this one."


class LLMStreamCut(LLMError):
    action = "The part that arrived is kept; ask again to continue."


class LLMContextOverflow(LLMError):
    status = 400
    action = "Start a new conversation, or pick a model with a larger context window."


def http_status(exc: SwitchboardError) -> int:
    """The HTTP status of a request that ends with this error."""
    return exc.status


def _status_by_code() -> dict[str, int]:
    """An event's `code` -> the status of the most general class with that code (a door that
    only has the event, like `/v1`, answers with it)."""
    found: dict[str, int] = {}
    pending: list[type[SwitchboardError]] = [SwitchboardError]
    while pending:
        cls = pending.pop(0)
        found.setdefault(cls.code, cls.status)
        pending += cls.__subclasses__()
    return found


def status_for_code(code: str) -> int:
    """The HTTP status for an `error` event's code (500 for a code no error has)."""
    return _STATUS_BY_CODE.get(code, 500)


_STATUS_BY_CODE = _status_by_code()
