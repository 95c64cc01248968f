"""A policy hook for tests, run as a real subprocess: reads the event (JSON) on stdin and
answers as its first argument says.

    allow | record FILE | deny REASON | exit2 REASON | ask REASON | modify_args JSON
    | redact WORD | sleep SECONDS | crash | nonsense | bad_decision | environment FILE
"""

import json
import os
import sys
import time

event = json.load(sys.stdin)
mode, arg = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "")


def answer(data):
    print(json.dumps(data))


if mode == "record":
    with open(arg, "a", encoding="utf-8") as out:
        out.write(json.dumps(event) + "\n")
elif mode == "environment":
    with open(arg, "w", encoding="utf-8") as out:
        json.dump(dict(os.environ), out)
elif mode == "deny":
    answer({"decision": "deny", "reason": arg})
elif mode == "exit2":
    print(arg, file=sys.stderr)
    sys.exit(2)
elif mode == "ask":
    answer({"decision": "ask", "reason": arg})
elif mode == "modify_args":
    answer({"decision": "modify", "arguments": json.loads(arg)})
elif mode == "redact":
    point = event["event"]
    if point == "post_tool":
        answer({"decision": "modify", "content": event["result"].replace(arg, "[redacted]")})
    elif point == "prompt_submit":
        answer({"decision": "modify", "prompt": event["prompt"].replace(arg, "[redacted]")})
    elif point == "pre_tool":
        changed = {k: v.replace(arg, "[redacted]") if isinstance(v, str) else v for k, v in event["arguments"].items()}
        answer({"decision": "modify", "arguments": changed})
elif mode == "sleep":
    time.sleep(float(arg))
elif mode == "crash":
    raise RuntimeError("the hook fell over")
elif mode == "nonsense":
    print("yes, probably")
elif mode == "bad_decision":
    answer({"decision": "maybe"})
