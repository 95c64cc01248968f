"""One access value: who is asking, in which groups, in a conversation at
which compliance level, and whether they administer the host.  Every
authorization question (may this user use that server, that model?) is asked
of it, at listing time and again at execution time."""

from __future__ import annotations

from dataclasses import dataclass, field

from .auth import User
from .config.models import ComplianceLevels, ModelConfig, ServerConfig

__all__ = ["Access"]


@dataclass(frozen=True, slots=True)
class Access:
    user: User
    compliance_level: str | None = None
    admin: bool = False
    compliance: ComplianceLevels = field(default_factory=ComplianceLevels)

    @property
    def email(self) -> str:
        return self.user.email

    @property
    def groups(self) -> set[str]:
        return set(self.user.groups)

    def is_admin(self) -> bool:
        return self.admin

    def may_use_server(self, config: ServerConfig | None) -> bool:
        """Tools, resources and prompts of this server, in this conversation."""
        return (
            config is not None
            and config.admits_group(self.groups)
            and self.compliance.admits(self.compliance_level, config.compliance_level)
        )

    def may_use_model(self, model: ModelConfig) -> bool:
        return model.admits_group(self.groups) and self.compliance.admits(self.compliance_level, model.compliance_level)

    def at_level(self, compliance_level: str | None) -> Access:
        return Access(self.user, compliance_level, self.admin, self.compliance)
