"""Which models a user may pick, which are usable now, and which one is the default.

Built from llmconfig.yml and the environment only: listing models never imports
litellm or calls a provider. What the catalogue learns from calls is one thing: a
model whose last call failed because it is not usable (rejected or missing
credentials, unknown model, unreachable endpoint) is never picked as the default
until a call to it succeeds again; it stays listed (with the failure) and can
still be chosen by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from switchboard.config.models import LLMConfig, ModelConfig
from switchboard.errors import LLMUnavailable
from switchboard.identity.access import Access

__all__ = ["DEMO_MODEL", "ModelCatalogue", "ModelInfo"]

DEMO_MODEL = "switchboard/demo"
_DEMO_DESCRIPTION = "Offline demo model (no LLM): calls tools you name, summarises results"


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    description: str
    available: bool
    reason: str | None  # why it is not available
    is_demo: bool
    compliance_level: str | None
    failing: str | None = None  # why its last call failed (it is not picked as the default meanwhile)


class ModelCatalogue:
    def __init__(self, config: LLMConfig, environ: Mapping[str, str] | None = None) -> None:
        self._config = config
        self._environ = os.environ if environ is None else environ
        self._by_name = {model.name: model for model in config.models}
        self._failing: dict[str, str] = {}  # model name -> why its last call failed

    def note_outcome(self, name: str, failure: str | None) -> None:
        """After a call: `failure` says why the model is not usable (None: the call worked)."""
        if failure is None:
            self._failing.pop(name, None)
        else:
            self._failing[name] = failure

    def entries(self, access: Access) -> list[ModelInfo]:
        """The models this user may use in this conversation, in config order,
        usable or not (with the reason)."""
        return [self._info(model) for model in self._admitted(access)]

    def default_model_name(self, access: Access) -> str | None:
        """The configured default when usable; the demo model only while nothing else is,
        unless the site's own file names it. A model whose last call failed is passed over."""
        usable = [m for m in self._admitted(access) if self._unavailable_reason(m) is None]
        working = [m for m in usable if m.name not in self._failing]
        configured = self._by_name.get(self._config.default_model or "")
        if (
            configured is not None
            and configured in working
            and (self._config.default_is_site_choice or not configured.is_demo)
        ):
            return configured.name
        real = [m for m in working if not m.is_demo]
        if real:
            return real[0].name
        fallback = working or usable  # every usable model failed: the first one still says why when used
        return fallback[0].name if fallback else None

    def default_note(self, access: Access) -> str | None:
        """Why the configured default is not the default now (its last call or its start-up probe
        failed), for the page to say so instead of quietly using another model."""
        configured = self._by_name.get(self._config.default_model or "")
        current = self.default_model_name(access)
        if configured is None or configured.name == current or configured not in self._admitted(access):
            return None
        why = self._failing.get(configured.name) or self._unavailable_reason(configured)
        if why is None:
            return None
        instead = f"'{current}' is used until it works" if current else "no other model is available"
        return f"The default model '{configured.name}' is not working ({why}); {instead}."

    def resolve(self, name: str | None, access: Access) -> ModelConfig:
        """The model to call for this request; raises LLMUnavailable saying why not."""
        choices = self._choice_hint(access)
        if name is None:
            default = self.default_model_name(access)
            if default is None:
                raise LLMUnavailable(
                    "No model is available to you in this conversation.",
                    action="Ask your administrator to configure a model (llmconfig.yml) or set its API key.",
                )
            return self._by_name[default]
        model = self._by_name.get(name)
        if model is None or not access.at_level(None).may_use_model(model):
            raise LLMUnavailable(f"There is no model named '{name}' for you.", action=f"Pick another model{choices}.")
        if not access.may_use_model(model):
            raise LLMUnavailable(
                f"Model '{name}' (compliance level {model.compliance_level}) may not be used in a "
                f"conversation at compliance level {access.compliance_level}.",
                action=f"Pick another model{choices}, or start a conversation at another compliance level.",
            )
        reason = self._unavailable_reason(model)
        if reason is not None:
            raise LLMUnavailable(
                f"Model '{name}' is not available: {reason}.",
                action=f"Pick another model{choices}, or ask your administrator to configure this one.",
            )
        return model

    # -- helpers -----------------------------------------------------------------
    def _admitted(self, access: Access) -> list[ModelConfig]:
        return [model for model in self._config.models if access.may_use_model(model)]

    def _unavailable_reason(self, model: ModelConfig) -> str | None:
        if model.is_demo and model.model != DEMO_MODEL:
            return f"'{model.model}' is not a built-in model (the built-in one is '{DEMO_MODEL}')"
        if model.api_key_env and not self._environ.get(model.api_key_env):
            return f"{model.api_key_env} is not set"
        return None

    def _info(self, model: ModelConfig) -> ModelInfo:
        reason = self._unavailable_reason(model)
        return ModelInfo(
            name=model.name,
            description=_demo_description(model.description) if model.is_demo else model.description,
            available=reason is None,
            reason=reason,
            is_demo=model.is_demo,
            compliance_level=model.compliance_level,
            failing=self._failing.get(model.name),
        )

    def _choice_hint(self, access: Access) -> str:
        names = [m.name for m in self._admitted(access) if self._unavailable_reason(m) is None]
        return f" ({', '.join(names)})" if names else ""


def _demo_description(description: str) -> str:
    if "demo" in description.lower():
        return description
    return f"{_DEMO_DESCRIPTION}. {description}" if description else _DEMO_DESCRIPTION
