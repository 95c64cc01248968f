"""A small OPA-style decision service for hooks.json's `http` handler. It answers each POSTed
event (or OPA's `{"input": event}`) with the first matching rule of a JSON rules file, else allow:

    python policy_server.py --port 8181 --rules policy_rules.json

A rule: {"decision": "deny" | "ask", "reason": "...", and any of "events", "tools" (globs over
qualified names), "servers", "groups" (the user is in one), "unless_groups" (the user is in none),
"compliance_levels"}. The answer is {"decision": ..., "reason": ...}; with OPA's body it is
wrapped as OPA's data API wraps it: {"result": {...}}. Standard library only."""

import argparse
import fnmatch
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def decide(rules, event):
    groups = set(event.get("user", {}).get("groups", []))
    for rule in rules:
        if "events" in rule and event.get("event") not in rule["events"]:
            continue
        tool = event.get("tool")
        if "tools" in rule and not (tool and any(fnmatch.fnmatchcase(tool, g) for g in rule["tools"])):
            continue
        if "servers" in rule and event.get("server") not in rule["servers"]:
            continue
        if "groups" in rule and not groups & set(rule["groups"]):
            continue
        if "unless_groups" in rule and groups & set(rule["unless_groups"]):
            continue
        if "compliance_levels" in rule and event.get("compliance_level") not in rule["compliance_levels"]:
            continue
        return {"decision": rule["decision"], "reason": rule.get("reason")}
    return {"decision": "allow"}


def handler_for(rules):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            except ValueError:
                self.send_error(400, "the body is not JSON")
                return
            wrapped = isinstance(body, dict) and isinstance(body.get("input"), dict)
            answer = decide(rules, body["input"] if wrapped else body)
            data = json.dumps({"result": answer} if wrapped else answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):  # quiet: the host logs every decision itself
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8181)
    parser.add_argument("--rules", default=str(Path(__file__).parent / "policy_rules.json"))
    args = parser.parse_args()
    rules = json.loads(Path(args.rules).read_text(encoding="utf-8"))["rules"]
    server = ThreadingHTTPServer((args.host, args.port), handler_for(rules))
    print(f"policy service on http://{args.host}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
