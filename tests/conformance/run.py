"""Run the MCP conformance suite's client scenarios against Switchboard (through
the host, `switchboard_client.py`) and against a plain fastmcp client
(`plain_client.py`), and print passed/total checks per scenario.

    uv run python tests/conformance/run.py                 # both clients, every scenario
    uv run python tests/conformance/run.py --client switchboard --scenario auth/metadata-default
    uv run python tests/conformance/run.py --json
    uv run python tests/conformance/run.py --suite 0.1.16      # the older suite (default: the newest)

The suite (`@modelcontextprotocol/conformance`, npm) needs Node 22 or newer; both
are installed on first use into ~/.cache/switchboard-conformance/<suite version> (or
$SWITCHBOARD_CONFORMANCE_DIR/<suite version>) with the npm client, as the npm package `node@^22`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITE_VERSIONS = ("0.1.16", "0.2.0-alpha.12")  # 0.2.0-alpha.12: the first with MCP 2026-07-28 scenarios
SUITE_VERSION = SUITE_VERSIONS[-1]
CLIENTS = {"switchboard": HERE / "switchboard_client.py", "plain": HERE / "plain_client.py"}


def suite_dir(version: str = SUITE_VERSION) -> Path:
    base = os.environ.get("SWITCHBOARD_CONFORMANCE_DIR") or Path.home() / ".cache" / "switchboard-conformance"
    return Path(base) / version


def install(version: str = SUITE_VERSION) -> Path:
    """The suite's command (that version), installed (quietly, once) with Node 22 beside it."""
    where = suite_dir(version)
    binary = where / "node_modules" / ".bin" / "conformance"
    if binary.exists() and (where / "node_modules" / ".bin" / "node").exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is missing: install Node.js and npm (apt-get install -y nodejs npm), then run again")
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
            "--prefix",
            str(where),
            "node@^22",
            f"@modelcontextprotocol/conformance@{version}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return binary


def scenarios(binary: Path) -> list[str]:
    out = subprocess.run(
        [str(binary), "list", "--client"], check=True, capture_output=True, text=True, env=_env(binary)
    ).stdout
    return [line.strip()[2:].split(" ")[0] for line in out.splitlines() if line.strip().startswith("- ")]


def _env(binary: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{binary.parent}{os.pathsep}{env.get('PATH', '')}"  # its own node 22 first
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the app starts without fetching litellm's price list
    return env


def run_scenario(binary: Path, client: str, scenario: str, timeout_ms: int = 120000) -> tuple[int, int, list[str]]:
    """(passed, total, names of failed checks) of one scenario with one client."""
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        command = f"{sys.executable} {CLIENTS[client]}"
        subprocess.run(
            [
                str(binary),
                "client",
                "--command",
                command,
                "--scenario",
                scenario,
                "--timeout",
                str(timeout_ms),
                "-o",
                out,
            ],
            env=_env(binary),
            cwd=out,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout_ms / 1000 + 60,
        )
        found = list(Path(out).rglob("checks.json"))
        if not found:
            return 0, 0, ["the suite wrote no checks"]
        checks = json.loads(found[0].read_text())
    counted = [c for c in checks if c.get("status") in ("SUCCESS", "FAILURE", "WARNING")]
    failed = [c["id"] for c in counted if c["status"] != "SUCCESS"]
    return len(counted) - len(failed), len(counted), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--client", choices=[*CLIENTS, "both"], default="both")
    parser.add_argument("--scenario", action="append", help="a scenario (repeatable); default: every client scenario")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--suite",
        choices=[*SUITE_VERSIONS, "all"],
        default=SUITE_VERSION,
        help="the suite's version (default: the newest); `all` only with --install-only",
    )
    parser.add_argument("--install-only", action="store_true", help="install the suite and Node 22, run nothing")
    args = parser.parse_args()
    if args.install_only:
        for version in SUITE_VERSIONS if args.suite == "all" else [args.suite]:
            install(version)
        return
    if args.suite == "all":
        parser.error("--suite all needs --install-only")
    binary = install(args.suite)
    names = args.scenario or scenarios(binary)
    clients = list(CLIENTS) if args.client == "both" else [args.client]
    results: dict[str, dict[str, dict[str, object]]] = {}
    for scenario in names:
        for client in clients:
            passed, total, failed = run_scenario(binary, client, scenario)
            results.setdefault(scenario, {})[client] = {"passed": passed, "total": total, "failed": failed}
            if not args.json:
                print(
                    f"{scenario:45} {client:12} {passed}/{total}"
                    + (f"  failed: {', '.join(failed)}" if failed else ""),
                    flush=True,
                )
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for client in clients:
        passed = sum(int(r[client]["passed"]) for r in results.values())  # type: ignore[call-overload]
        total = sum(int(r[client]["total"]) for r in results.values())  # type: ignore[call-overload]
        print(f"{'total':45} {client:12} {passed}/{total}")


if __name__ == "__main__":
    main()
