"""The exception tree of Switchboard.

Third-party errors are translated into this tree once, where the library is
called (litellm errors in ``llm/``, MCP errors in ``tools/``).  The web layer
turns any of these into an ``error`` event or HTTP status in one place.

    SwitchboardError                 code        (what the user sees)
    ├── ConfigError                  internal    a config file is wrong
    ├── BadRequest                   bad_request a malformed client message
    ├── Unauthorized                 unauthorized no (trusted) identity
    ├── Forbidden                    forbidden   identity known, not allowed
    ├── NotFound                     not_found
    ├── Conflict                     conflict    the id is taken, or the conversation is busy (a turn runs)
    ├── TooMany                      rate_limited a per-user limit is reached (turns, streams at once)
    ├── Cancelled                    cancelled   the user pressed Stop
    ├── RateLimited                  rate_limited too many requests (an MCP App's bridge)
    ├── ToolError                    tool_error  a tool call could not run
    │   ├── ToolNotAllowed           forbidden   not in the user's catalogue
    │   ├── ToolTimeout              timeout
    │   ├── ServerUnavailable        tool_error  the server is not ready
    │   ├── NeedsAuth                tool_error  the user has not connected (signed in to) the server
    │   ├── SignInFailed             tool_error  an OAuth sign-in was refused or failed (never the remote answer)
    │   └── TaskGone                 tool_error  the server no longer knows a task (expired or lost)
    ├── StoreError                   internal    the conversation store failed a read or write
    │   └── StoreUnavailable         internal    the database cannot be reached (names it and what to check)
    └── LLMError                     llm_error   the model call failed
        ├── LLMRateLimited           rate_limited
        ├── LLMTimeout               timeout
        ├── LLMUnavailable           llm_error   not configured / no key
        ├── LLMStreamCut             llm_error   the answer broke off; the part shown is kept
        └── LLMContextOverflow       llm_error   the conversation no longer fits the model
"""

from __future__ import annotations

__all__ = [
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
    "NeedsAuth",
    "NotFound",
    "RateLimited",
    "ServerUnavailable",
    "SignInFailed",
    "StoreError",
    "TaskGone",
    "StoreUnavailable",
    "SwitchboardError",
    "ToolError",
    "ToolNotAllowed",
    "ToolTimeout",
    "TooMany",
    "Unauthorized",
]


class SwitchboardError(Exception):
    code = "internal"
    action: str | None = None

    def __init__(self, message: str, *, action: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if action is not None:
            self.action = action


class ConfigError(SwitchboardError):
    """A config problem, located by file, server or model, and field."""

    def __init__(self, message: str, *, file: str = "", server: str = "", field: str = "", model: str = "") -> None:
        self.file, self.server, self.field, self.model = file, server, field, model
        parts = (file, f"server '{server}'" if server else "", f"model '{model}'" if model else "",
                 f"field '{field}'" if field else "")  # fmt: skip
        where = ", ".join(part for part in parts if part)
        super().__init__(f"{where}: {message}" if where else message)


class BadRequest(SwitchboardError):
    code = "bad_request"


class Unauthorized(SwitchboardError):
    code = "unauthorized"
    action = "Sign in through your organisation's login page and reload."


class Forbidden(SwitchboardError):
    code = "forbidden"


class NotFound(SwitchboardError):
    code = "not_found"


class Conflict(SwitchboardError):
    """Something with that id exists already (HTTP 409); on the websocket a `bad_request`."""

    code = "bad_request"


class TooMany(SwitchboardError):
    """A per-user limit is reached (HTTP 429); the message names the limit."""

    code = "rate_limited"


class Cancelled(SwitchboardError):
    code = "cancelled"


class RateLimited(TooMany):
    """An MCP App's requests over their rate (HTTP 429)."""


class ToolError(SwitchboardError):
    code = "tool_error"


class ToolNotAllowed(ToolError):
    code = "forbidden"


class ToolTimeout(ToolError):
    code = "timeout"


class ServerUnavailable(ToolError):
    pass


class NeedsAuth(ToolError):
    """The server needs the user's own credential, which they have not given (or which was refused)."""


class SignInFailed(ToolError):
    """Signing in to a server's authorization server failed or was stopped.  The message says
    which step and why in the host's words: never the remote server's answer."""


class TaskGone(ToolError):
    """The server no longer knows a task the host holds (past its TTL, or the server lost it)."""


class StoreError(SwitchboardError):
    """A conversation-store read or write failed; the message says what was lost, not the driver's text."""

    action = "Try again in a moment; if it keeps failing, ask your administrator to check the database."


class StoreUnavailable(StoreError):
    """The database cannot be reached; the message names it (never its password) and what to check."""

    action = "Ask your administrator to check that the database is running and SWITCHBOARD_DATABASE_URL is right."


class LLMError(SwitchboardError):
    code = "llm_error"
    action = "Try again, or pick another model."


class LLMRateLimited(LLMError):
    code = "rate_limited"
    action = "The model provider is rate-limiting requests; wait a minute and try again."


class LLMTimeout(LLMError):
    code = "timeout"
    action = "The model took too long to answer; try again or pick another model."


class LLMUnavailable(LLMError):
    action = "Pick another model, or ask your administrator to configure this one."


class LLMStreamCut(LLMError):
    action = "The part that arrived is kept; ask again to continue."


class LLMContextOverflow(LLMError):
    action = "Start a new conversation, or pick a model with a larger context window."
