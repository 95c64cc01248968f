"""What a user attaches to a message: uploaded files (listed for the model,
handed to tools as signed URLs) and MCP resources (their text becomes
context for the model).  Both are checked against the user's rights."""

from __future__ import annotations

from ..errors import Forbidden, NotFound, SwitchboardError
from ..files.artifacts import ArtifactStore, StoredFile
from ..identity.access import Access
from ..tools import ServerPool
from .events import ChatMessage
from .turn_state import TurnState

__all__ = ["MAX_RESOURCE_CHARS", "attach"]

MAX_RESOURCE_CHARS = 50_000


async def attach(request: ChatMessage, turn: TurnState, files: ArtifactStore, pool: ServerPool, access: Access) -> str:
    """The user message's content with its attachments; raises NotFound/Forbidden."""
    owner = turn.user.email
    try:
        attached: list[StoredFile] = [(await files.aget(file_id, owner=owner))[0] for file_id in request.files]
    except NotFound:
        raise NotFound(
            "an attached file was not found", action="Attach the file again; uploads are kept for a limited time."
        ) from None
    turn.progress.turn_files = attached
    turn.conversation.files.update((f.id, f) for f in attached)
    content = request.content
    if attached:
        listing = "; ".join(f"{f.name} ({f.mime}, {f.size:,} bytes)" for f in attached)
        content += (
            f"\n\n[Attached files: {listing}. A tool's file parameter gets the file "
            "named in it (by name), else the one file of a type the tool takes.]"
        )
    for ref in request.resources:
        if not pool.registry.server_admits(ref.server, access):
            raise Forbidden(f"you may not use resources of '{ref.server}' in this conversation")
        try:
            parts = await pool.read_resource(ref.server, ref.uri, user=owner)
        except SwitchboardError as exc:
            raise NotFound(f"the resource {ref.uri} could not be read: {exc.message}") from None
        for part in parts:
            if part.mime.startswith("text/") or part.mime in ("application/json", "application/xml"):
                text = part.data.decode("utf-8", "replace")
                if len(text) > MAX_RESOURCE_CHARS:
                    text = text[:MAX_RESOURCE_CHARS] + f"\n[cut: {len(text):,} characters in all]"
                content += f'\n\n<resource server="{ref.server}" uri="{ref.uri}">\n{text}\n</resource>'
            else:
                content += (
                    f"\n\n[resource {ref.uri} from {ref.server}: {part.mime}, {len(part.data):,} bytes, not text]"
                )
    return content
