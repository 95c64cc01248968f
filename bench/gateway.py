"""Tool gateway search: quality and latency.

Quality: requests written as a user would phrase them (not copied from the
descriptions) are searched, as they are, over one catalogue that holds the real
tool lists of the example servers (time, git, everything, filesystem, memory)
and the bundled servers (pdfbasic, dataviz), snapshotted in bench/catalogues.json
by bench/snapshot_catalogues.py, plus the generated 300-tool server of
bench/catalogue.py (`cat`).  recall@k: the share of requests with an expected
tool among the first k results.  The sets live in bench/gateway_tasks.json:
`tuned` (110 requests the search was tuned on), `dev` (44 more, to develop on)
and two held-out sets, each written before a round of ranking changes and never
tuned on, which estimate recall for unseen requests: `--misses` prints only the
misses of the sets one may look at.

Latency: a query over 1,000 generated tools (plus the real ones), `--rounds`
runs of the tuned requests; also the index build time and filtering by a user's
offered set (half the catalogue) after ranking.

    uv run python bench/gateway.py [--rounds 5] [--json]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import mcp_types

import _support as S
from catalogue import server_source
from switchboard.chat.gateway import ToolTokenEstimates, estimate_tokens
from switchboard.config.models import ServerConfig
from switchboard.tools import ToolRegistry
from switchboard.tools.search import ToolIndex

CATALOGUES = Path(__file__).parent / "catalogues.json"

TASK_SETS = Path(__file__).parent / "gateway_tasks.json"


def task_sets() -> dict[str, list[tuple[str, list[str]]]]:
    """The request sets of bench/gateway_tasks.json: (request, acceptable tools), several
    tools when more than one does the job."""
    data = json.loads(TASK_SETS.read_text())
    return {name: [(t["request"], t["expected"]) for t in entry["tasks"]] for name, entry in data.items()}


def _generated(n: int) -> list[mcp_types.Tool]:
    namespace: dict[str, object] = {}
    exec(server_source(n), namespace)
    tools = asyncio.run(namespace["mcp"].list_tools())  # type: ignore[attr-defined]
    return [mcp_types.Tool.model_validate(t.to_mcp_tool().model_dump(by_alias=True)) for t in tools]


def _registry(generated: int) -> ToolRegistry:
    snapshot = json.loads(CATALOGUES.read_text())
    servers = [
        (
            name,
            ServerConfig(command="x", description=entry["description"]),
            [mcp_types.Tool.model_validate(t) for t in entry["tools"]],
        )
        for name, entry in snapshot.items()
    ]
    servers.append(("cat", ServerConfig(command="x"), _generated(generated)))
    registry = ToolRegistry()
    registry.rebuild(servers)
    return registry


def quality(
    registry: ToolRegistry, tasks: list[tuple[str, list[str]]]
) -> tuple[dict[str, float], list[dict[str, object]]]:
    everyone = {t.qualified_name for t in registry.all()}
    missing = sorted({name for _, names in tasks for name in names} - everyone)
    if missing:
        raise SystemExit(f"tasks expect tools that are not in the catalogue: {missing}")
    at1 = at5 = 0
    misses = []
    for request, expected in tasks:
        found = [h.name for h in registry.index.search(request, everyone, limit=5)]
        at1 += bool(found[:1]) and found[0] in expected
        at5 += any(name in expected for name in found)
        if not any(name in expected for name in found[:1]):
            misses.append({"request": request, "expected": expected, "top5": found})
    n = len(tasks)
    sizes = [
        len(
            json.dumps(
                [
                    {"name": h.name, "server": h.server, "summary": h.summary}
                    for h in registry.index.search(request, everyone, limit=8)
                ]
            )
        )
        for request, _ in tasks
    ]
    return {
        "answer_tokens_est_mean": statistics.mean(sizes) / 4,
        "tasks": n,
        "tools": len(everyone),
        "recall@1": at1 / n,
        "recall@5": at5 / n,
    }, misses


def latency(registry: ToolRegistry, rounds: int, requests: list[str]) -> dict[str, object]:
    names = [t.qualified_name for t in registry.all()]
    everyone, half = set(names), set(names[::2])
    registry.index.search("warm up", everyone)
    runs: dict[str, list[float]] = {"all": [], "half": [], "all_cpu": [], "half_cpu": []}
    for _ in range(rounds):
        for label, allowed in (("all", everyone), ("half", half)):
            started, cpu = time.perf_counter(), time.process_time()
            for request in requests:
                registry.index.search(request, allowed, limit=8)
            runs[label].append((time.perf_counter() - started) * 1e6 / len(requests))
            runs[f"{label}_cpu"].append((time.process_time() - cpu) * 1e6 / len(requests))
    builds = []
    for _ in range(rounds):
        started = time.perf_counter()
        ToolIndex(registry.all()).close()  # what a registry change costs on the next search
        builds.append((time.perf_counter() - started) * 1000)
    return {
        "tools": len(names),
        "query_us_all": runs["all"],
        "query_us_half_offered": runs["half"],
        "query_cpu_us_all": runs["all_cpu"],
        "query_cpu_us_half_offered": runs["half_cpu"],
        "index_build_ms": builds,
    }


def exposure_cost(registry: ToolRegistry, rounds: int, turns: int = 200) -> dict[str, list[float]]:
    """What `auto` exposure pays per turn to decide (µs): the tokens of every offered tool's
    definition, measured from their JSON each turn (before) or remembered per catalogue
    version and offered set (now); interleaved, round by round."""
    tools = registry.all()
    estimates = ToolTokenEstimates()
    runs: dict[str, list[float]] = {"measured_each_turn_us": [], "remembered_us": []}
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(turns):
            measured = estimate_tokens([tool.openai_schema() for tool in tools])
        runs["measured_each_turn_us"].append((time.perf_counter() - started) * 1e6 / turns)
        started = time.perf_counter()
        for _ in range(turns):
            remembered = estimates.tokens(registry.version, tools)
        runs["remembered_us"].append((time.perf_counter() - started) * 1e6 / turns)
        assert measured == remembered
    return runs


def main() -> None:
    p = S.parser(__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument(
        "--misses",
        default="tuned,dev",
        help="print the top-1 misses of these sets (comma-separated, or 'all'); "
        "held-out sets stay unseen while the search is tuned",
    )
    args = p.parse_args()
    started, load = time.monotonic(), [round(x, 2) for x in os.getloadavg()]
    catalogue = _registry(300)
    sets = task_sets()
    results = {name: quality(catalogue, tasks) for name, tasks in sets.items()}
    print(
        f"\nSearch quality: requests as a user writes them, over the real catalogues + 300 generated tools "
        f"({len(catalogue.all())} tools)\n"
    )
    S.print_table(
        ["set", "requests", "recall@1", "recall@5", "search answer (8 results), est. tokens"],
        [
            [name, s["tasks"], f"{s['recall@1']:.1%}", f"{s['recall@5']:.1%}", f"{s['answer_tokens_est_mean']:.0f}"]
            for name, (s, _) in results.items()
        ],
    )
    shown = set(sets) if args.misses == "all" else set(args.misses.split(","))
    for name, (_, misses) in results.items():
        for miss in misses if name in shown else []:
            print(f"  {name} top-1 miss: {miss['request']!r}: expected {miss['expected']}, got {miss['top5']}")
    requests = [request for tasks in sets.values() for request, _ in tasks]
    thousand = _registry(1000)
    timing = latency(thousand, args.rounds, requests)
    print(
        f"\nSearch latency over {timing['tools']} tools (µs per query, mean of {len(requests)} queries; one value per round)\n"
    )
    rows = [
        [label, f"{min(v):.0f}", f"{statistics.median(v):.0f}", f"{max(v):.0f}"]
        for label, v in (
            ("every tool usable", timing["query_us_all"]),
            ("half usable", timing["query_us_half_offered"]),
            ("every tool usable, CPU time", timing["query_cpu_us_all"]),
            ("half usable, CPU time", timing["query_cpu_us_half_offered"]),
            ("index build (ms)", timing["index_build_ms"]),
        )
    ]
    S.print_table(["", "min", "median", "max"], rows)
    cost = exposure_cost(thousand, args.rounds)
    print(
        f"\n`auto` exposure: deciding per turn over {timing['tools']} offered tools (µs per turn; one value per round)\n"
    )
    S.print_table(
        ["", "min", "median", "max"],
        [
            [label, f"{min(v):.1f}", f"{statistics.median(v):.1f}", f"{max(v):.1f}"]
            for label, v in (
                ("JSON measured each turn (before)", cost["measured_each_turn_us"]),
                ("remembered per version and set", cost["remembered_us"]),
            )
        ],
    )
    S.report(
        "gateway",
        {
            "sets": {name: s for name, (s, _) in results.items()},
            "misses": {name: m for name, (_, m) in results.items()},
            "latency": timing,
            "auto_exposure": cost,
        },
        args,
        started,
        load,
    )


if __name__ == "__main__":
    main()
