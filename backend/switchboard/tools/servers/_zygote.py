"""The fork-after-import parent of the bundled stdio servers (run as a script by `forked.py`).

A bundled server spends about a second of CPU importing fastmcp before it reads its first
message. This process pays that once: it imports fastmcp (and builds a throwaway server, which
loads what fastmcp loads lazily), then waits on its control socket (a SOCK_SEQPACKET
descriptor whose number is its one argument). Each request is one JSON packet
`{"argv": [...], "cwd": "..."}` carrying four file descriptors: the child's stdin, stdout and
stderr, and a pipe holding its environment as JSON, which only the child reads (no server's
variables pass through this process's memory, which every later child inherits). The answer
is `{"pid": N}` or `{"error": "..."}`. A forked child starts its own session (its pid is its
process group, as with `start_new_session`), takes the first three descriptors as 0, 1 and 2,
moves to `cwd`, gets exactly the environment from the pipe, and runs the script as
`python script.py args` would. When a child ends, `{"exit": pid, "code": C}` follows (C
negative: the signal that killed it).

When the control socket closes (the app stopped, or died), the remaining children are sent
SIGTERM, then SIGKILL, and this process exits.

Only the standard library and fastmcp are imported here; nothing of the app.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import time
import traceback

_MAX_PACKET = 1 << 20


def _warm_up() -> None:
    """Import what a FastMCP server imports, including what fastmcp loads on first use."""
    import httpx  # noqa: F401  # the bundled servers fetch files with it
    import mcp.server.stdio  # noqa: F401
    from fastmcp import FastMCP

    server = FastMCP("zygote")

    @server.tool
    def echo(text: str) -> str:
        """Echo the text."""
        return text


def _run_child(request: dict, fds: list[int], control: socket.socket, others: list[int]) -> None:
    """In the forked child: become the server the request describes. Never returns."""
    code = 1
    try:
        os.setsid()
        control.close()
        for fd in others:
            os.close(fd)
        with os.fdopen(fds[3], "rb") as pipe:
            env = json.loads(pipe.read())
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds[:3]:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(env)
        _settings_from_environment()
        script = os.path.abspath(request["argv"][1])
        sys.argv = request["argv"][1:]
        sys.path.insert(0, os.path.dirname(script))
        runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _settings_from_environment() -> None:
    """fastmcp read its settings from the zygote's environment at import: read them again from
    the server's own (FASTMCP_* variables in its `env` work as in a process of its own)."""
    import fastmcp
    from fastmcp.utilities.logging import configure_logging

    fastmcp.settings = type(fastmcp.settings)()
    if fastmcp.settings.log_enabled:
        configure_logging(
            level=fastmcp.settings.log_level, enable_rich_tracebacks=fastmcp.settings.enable_rich_tracebacks
        )


def _send(control: socket.socket, message: dict) -> None:
    try:
        control.send(json.dumps(message).encode())
    except OSError:
        pass  # the app has gone; the loop notices on its next read


def _fork(control: socket.socket, request: dict, fds: list[int], children: dict[int, int], selector_fd: int) -> None:
    try:
        if len(fds) != 4 or not isinstance(request.get("argv"), list) or len(request["argv"]) < 2:
            raise ValueError("a request needs argv (interpreter, script, ...) and four descriptors")
        pid = os.fork()
        if pid == 0:
            _run_child(request, fds, control, [selector_fd, *children])
        children[os.pidfd_open(pid)] = pid
        _send(control, {"pid": pid})
    except Exception as exc:
        _send(control, {"error": f"{type(exc).__name__}: {exc}"})
    finally:
        for fd in fds:
            os.close(fd)


def _reap(control: socket.socket, pidfd: int, children: dict[int, int]) -> None:
    pid = children.pop(pidfd)
    os.close(pidfd)
    _, status = os.waitpid(pid, 0)
    _send(control, {"exit": pid, "code": os.waitstatus_to_exitcode(status)})


def _stop_children(children: dict[int, int]) -> None:
    for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
        for pid in children.values():
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + wait_s
        while children and time.monotonic() < deadline:
            for pidfd, pid in list(children.items()):
                if os.waitpid(pid, os.WNOHANG)[0] != 0:
                    os.close(pidfd)
                    del children[pidfd]
            time.sleep(0.02)
        if not children:
            return


def main() -> None:
    del sys.path[0]  # this script's folder (the app's tools package) is no place to import from
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the app stops this process, not the terminal's Ctrl-C
    gc.disable()  # the imports make objects that live as long as the process: no use collecting meanwhile
    _warm_up()
    gc.freeze()  # and no later collection in a child walks them (or copies the pages they are on)
    gc.enable()
    control = socket.socket(fileno=int(sys.argv[1]))
    _send(control, {"ready": os.getpid()})
    children: dict[int, int] = {}  # pidfd -> pid
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is control:
                try:
                    data, fds, _, _ = socket.recv_fds(control, _MAX_PACKET, 4)
                except OSError:
                    data, fds = b"", []
                if not data:
                    for fd in fds:
                        os.close(fd)
                    _stop_children(children)
                    return
                before = set(children)
                _fork(control, json.loads(data), fds, children, selector.fileno())
                for pidfd in set(children) - before:
                    selector.register(pidfd, selectors.EVENT_READ)
            else:
                selector.unregister(key.fd)
                _reap(control, key.fd, children)


if __name__ == "__main__":
    main()
