"""A hooks.json command hook: a tool blocklist and a redaction filter, configured by
blocklist.json beside it. Run by the host with the event as JSON on stdin:

- pre_tool: a tool whose qualified name matches `deny_tools` is denied (exit status 2, the
  reason on stderr); arguments holding a `redact` pattern are rewritten (the user approves them);
- post_tool: a result holding a pattern is rewritten before the user, the model or the store see it;
- prompt_submit: so is the user's prompt.

Anything else is allowed (no output). Standard library only."""

import fnmatch
import json
import re
import sys
from pathlib import Path

RULES = json.loads((Path(__file__).parent / "blocklist.json").read_text(encoding="utf-8"))
PATTERNS = [(re.compile(rule["pattern"]), rule["with"]) for rule in RULES.get("redact", [])]


def redact(text):
    for pattern, replacement in PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_value(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value


def main():
    event = json.load(sys.stdin)
    point = event["event"]
    if point == "pre_tool":
        tool = event["tool"]
        if any(fnmatch.fnmatchcase(tool, glob) for glob in RULES.get("deny_tools", [])):
            print(f"the tool {tool} is blocked at this site", file=sys.stderr)
            sys.exit(2)
        changed = redact_value(event["arguments"])
        if changed != event["arguments"]:
            print(json.dumps({"decision": "modify", "arguments": changed, "reason": "sensitive values removed"}))
    elif point == "post_tool" and "result" in event:
        changed = redact(event["result"])
        if changed != event["result"]:
            print(json.dumps({"decision": "modify", "content": changed}))
    elif point == "prompt_submit":
        changed = redact(event["prompt"])
        if changed != event["prompt"]:
            print(json.dumps({"decision": "modify", "prompt": changed}))


if __name__ == "__main__":
    main()
