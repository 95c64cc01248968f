"""Background tasks over HTTP (MCP Tasks): the caller's tasks, and cancelling one."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from ..errors import NotFound
from ..identity.users import User
from ..store.tasks import TaskRecord
from .deps import current_user, services_of

__all__ = ["router"]

router = APIRouter(prefix="/api/tasks", tags=["tasks"])
UserDep = Annotated[User, Depends(current_user)]


class TaskInfo(BaseModel):
    id: str = Field(description="the host's id of the task (what cancel takes)")
    conversation_id: str
    call_id: str
    server: str
    tool: str
    status: str = Field(description="working | input_required | completed | failed | cancelled")
    progress: float | None = None
    message: str | None = None
    result: dict[str, Any] | None = Field(default=None, description="{ok, content, message_id} once finished")
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, record: TaskRecord) -> TaskInfo:
        return cls(
            id=record.id,
            conversation_id=record.conversation_id,
            call_id=record.call_id,
            server=record.server,
            tool=record.tool,
            status=record.status,
            progress=record.progress,
            message=record.message,
            result=record.result,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )


class TaskList(BaseModel):
    tasks: list[TaskInfo]


@router.get("")
async def list_tasks(
    request: Request,
    user: UserDep,
    conversation_id: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> TaskList:
    """Your tasks, newest first (`conversation_id`: those of one conversation)."""
    records = await services_of(request).tasks.records.of_owner(user.email, conversation_id, limit)
    return TaskList(tasks=[TaskInfo.of(record) for record in records])


@router.post("/{task_id}/cancel")
async def cancel_task(request: Request, user: UserDep, task_id: str) -> TaskInfo:
    """Ask the server to cancel one of your tasks; the `task` event says when it has stopped."""
    record = await services_of(request).tasks.cancel(user.email, task_id)
    if record is None:
        raise NotFound(f"you have no task '{task_id}'")
    return TaskInfo.of(record)
