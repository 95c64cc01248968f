"""Config files: load, merge (defaults <- overrides) and validate."""

from .loader import AppConfig, McpConfig, load_app_config, load_mcp_config
from .models import ComplianceLevels, GroupsConfig, LLMConfig, ModelConfig, ServerConfig, ToolFilter

__all__ = [
    "AppConfig",
    "ComplianceLevels",
    "GroupsConfig",
    "LLMConfig",
    "McpConfig",
    "ModelConfig",
    "ServerConfig",
    "ToolFilter",
    "load_app_config",
    "load_mcp_config",
]
