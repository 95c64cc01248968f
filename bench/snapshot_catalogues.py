"""List the tools of the example and bundled servers once and store them in
bench/catalogues.json, the real catalogues the gateway's search-quality
benchmark (bench/gateway.py) runs over without starting any server.

    uv run python bench/snapshot_catalogues.py
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from switchboard.config.loader import McpConfig
from switchboard.config.models import ServerConfig
from switchboard.settings import PROJECT_ROOT
from switchboard.tools import ServerPool

OUT = Path(__file__).parent / "catalogues.json"


def _servers(scratch: Path) -> dict[str, ServerConfig]:
    found: dict[str, ServerConfig] = {}
    for path in [
        PROJECT_ROOT / "config" / "defaults" / "mcp.json",
        *sorted((PROJECT_ROOT / "config" / "examples").glob("*.json")),
    ]:
        for name, raw in json.loads(path.read_text())["servers"].items():
            raw = {k: v for k, v in raw.items() if k != "env"}  # no persistent memory file for a listing
            if name == "filesystem":  # its folder need not exist here: list a scratch one
                raw["args"] = [*raw["args"][:-1], str(scratch)]
            found[name] = ServerConfig.model_validate(raw)
    return found


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pool = ServerPool(
            McpConfig(servers=_servers(Path(tmp))), project_root=PROJECT_ROOT, log_dir=Path(tmp), init_timeout_s=120
        )
        pool.start()
        await pool.wait_settled(180)
        catalogues = {}
        for name, conn in pool.connections.items():
            if conn.status.status != "ready":
                raise SystemExit(f"server {name} is {conn.status.status}: {conn.status.reason}")
            catalogues[name] = {
                "description": conn.config.description,
                "tools": [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in conn.tools],
            }
        await pool.stop()
    OUT.write_text(json.dumps(catalogues, indent=1, ensure_ascii=False) + "\n")
    print(f"{OUT}: " + ", ".join(f"{k} {len(v['tools'])}" for k, v in catalogues.items()))


if __name__ == "__main__":
    asyncio.run(main())
