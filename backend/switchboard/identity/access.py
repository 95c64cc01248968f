"""The one authorization door: who is asking (a `User`, with the groups and admin
worked out for this request or turn), in a conversation at which compliance level.

Every question is asked here, in the shape of datasette's
`permission_allowed(actor, action, resource)`: `Access(...).allowed("use_server", config)`,
or the named helpers (`may_use_server`, `may_see_server`, `may_use_model`,
`is_admin`).  Routes, doors, the gateway, the tool calls and the catalogue pushes
all ask it, at listing time and again at execution time; none of them compares
groups itself (tests/unit/test_identity_door.py)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from ..config.models import ComplianceLevels, GroupsConfig, ModelConfig, ServerConfig
from .users import User

__all__ = ["Access", "Action", "administers"]

Action = Literal["use_server", "see_server", "use_model", "administer"]


def administers(groups: Iterable[str], config: GroupsConfig) -> bool:
    """Whether groups a user was last seen with (the admin console's list, not a signed-in
    request: that one asks `Access(user).is_admin`) include the administrators' group."""
    return config.admin_group in set(groups)


@dataclass(frozen=True, slots=True)
class Access:
    user: User
    compliance_level: str | None = None
    compliance: ComplianceLevels = field(default_factory=ComplianceLevels)

    @property
    def email(self) -> str:
        return self.user.email

    @property
    def groups(self) -> set[str]:
        return set(self.user.groups)

    def allowed(self, action: Action, resource: ServerConfig | ModelConfig | None = None) -> bool:
        if action == "administer":
            return self.is_admin()
        if action == "use_model":
            return isinstance(resource, ModelConfig) and self.may_use_model(resource)
        config = resource if isinstance(resource, ServerConfig) else None
        return self.may_see_server(config) if action == "see_server" else self.may_use_server(config)

    def is_admin(self) -> bool:
        return self.user.admin

    def may_use_server(self, config: ServerConfig | None) -> bool:
        """Tools, resources and prompts of this server, in this conversation."""
        return (
            config is not None
            and (config.owner is None or config.owner == self.email)  # a user's own server: its owner only
            and config.admits_group(self.groups)
            and self.compliance.admits(self.compliance_level, config.compliance_level)
        )

    def may_see_server(self, config: ServerConfig | None) -> bool:
        """Its status and changes (not its listing): its users, and administrators (every server)."""
        return self.is_admin() or self.may_use_server(config)

    def may_use_model(self, model: ModelConfig) -> bool:
        return model.admits_group(self.groups) and self.compliance.admits(self.compliance_level, model.compliance_level)

    def at_level(self, compliance_level: str | None) -> Access:
        return Access(self.user, compliance_level, self.compliance)
