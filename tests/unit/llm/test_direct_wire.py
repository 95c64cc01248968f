"""The direct path's own wire handling: server-sent events read from bytes as they
arrive, and the proxy the environment names for an endpoint."""

import json

import httpx
import pytest

from switchboard.config.models import ModelConfig
from switchboard.errors import LLMError
from switchboard.llm import LLMClient
from switchboard.llm.direct_wire import _EventParser, _proxy_for
from tests.support.llm_double import ErrorReply, OddReply, TextReply, ToolCall, ToolCallReply


def parse(*pieces: bytes) -> list[bytes]:
    parser = _EventParser()
    return [data for piece in pieces for data in parser.feed(piece)] + parser.end()


def test_events_split_anywhere_are_put_back_together():
    stream = b'data: {"a": 1}\n\ndata: {"b": 2}\n\ndata: [DONE]\n\n'
    whole = parse(stream)
    for cut in range(1, len(stream)):
        assert parse(stream[:cut], stream[cut:]) == whole
    assert [json.loads(d) for d in whole[:2]] == [{"a": 1}, {"b": 2}] and whole[2] == b"[DONE]"


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_every_line_ending_and_a_cr_lf_split_across_reads(newline):
    stream = b'data: {"x": 1}' + newline + newline + b'data: {"y": 2}' + newline + newline
    assert parse(stream) == [b'{"x": 1}', b'{"y": 2}']
    for cut in range(1, len(stream)):
        assert parse(stream[:cut], stream[cut:]) == [b'{"x": 1}', b'{"y": 2}'], cut


def test_comments_other_fields_and_multi_line_data():
    stream = b': keep-alive\n\nevent: chunk\nid: 7\ndata: {"a":\ndata:  1}\n\nretry: 10\n\n'
    assert [json.loads(d) for d in parse(stream)] == [{"a": 1}]
    assert parse(b'data: {"a": 1}\n') == []  # not complete until the blank line


def test_the_proxy_the_environment_names():
    url = httpx.URL("https://api.example.com/v1/chat/completions")
    assert _proxy_for(url, {}) is None
    assert _proxy_for(url, {"HTTPS_PROXY": "http://proxy:3128"}) == "http://proxy:3128"
    assert _proxy_for(url, {"https_proxy": "proxy:3128"}) == "http://proxy:3128"
    assert _proxy_for(url, {"ALL_PROXY": "socks5://s:1080"}) == "socks5://s:1080"
    assert _proxy_for(url, {"HTTP_PROXY": "http://proxy:3128"}) is None  # that one is for http:// URLs
    for no_proxy in ("example.com", ".example.com", "api.example.com", "*", "other.org, example.com"):
        assert _proxy_for(url, {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": no_proxy}) is None, no_proxy
    assert _proxy_for(url, {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "ample.com"}) == "http://p:1"


async def test_a_same_host_307_or_308_is_followed_and_any_other_redirect_is_an_error(llm):
    client = LLMClient(environ={"K": "k"}, base_delay_s=0.001)
    model = ModelConfig(name="double", model="openai/m", api_base=llm.base_url, api_key_env="K")
    try:
        llm.enqueue(ErrorReply(308, "moved", location="/moved/v1/chat/completions"), TextReply("found you"))
        assert await client.complete(model, [{"role": "user", "content": "hi"}]) == "found you"
        assert llm.request_headers[1]["authorization"] == "Bearer k" and len(llm.requests) == 2

        llm.reset()
        llm.enqueue(ErrorReply(302, "found", location="https://elsewhere.example/v1/chat/completions"))
        with pytest.raises(LLMError) as caught:
            await client.complete(model, [{"role": "user", "content": "hi"}])
        assert "elsewhere.example" in caught.value.message and "api_base" in caught.value.message
        assert len(llm.requests) == 1  # not sent there, and not retried
    finally:
        await client.aclose()


async def test_a_cookie_the_endpoint_sets_is_not_sent_back(llm):
    """The direct path keeps no cookies: what one answer sets (here a 503 that is then retried)
    reaches no later request, so no state rides along between users' calls. (By host name: a
    jar keeps no cookie of an IP address anyway.)"""
    client = LLMClient(environ={"K": "k"}, base_delay_s=0.001)
    by_name = llm.base_url.replace("127.0.0.1", "localhost")
    model = ModelConfig(name="double", model="openai/m", api_base=by_name, api_key_env="K")
    try:
        llm.enqueue(ErrorReply(503, "busy", set_cookie="session=abc; Path=/"), TextReply("hello"))
        assert await client.complete(model, [{"role": "user", "content": "hi"}]) == "hello"
        llm.enqueue(TextReply("again"))
        assert await client.complete(model, [{"role": "user", "content": "hi"}]) == "again"
        assert len(llm.requests) == 3 and not any("cookie" in h for h in llm.request_headers)
    finally:
        await client.aclose()


def test_the_tools_json_is_kept_for_the_same_definitions_and_made_anew_for_changed_ones():
    from switchboard.llm.direct_wire import DirectPool

    pool = DirectPool()
    one = {"type": "function", "function": {"name": "a_b", "description": "first", "parameters": {}}}
    assert json.loads(pool.tools_json([one])) == [one]
    assert pool.tools_json([one]) is pool.tools_json([one])  # the same dicts: the kept text
    changed = {"type": "function", "function": {"name": "a_b", "description": "second", "parameters": {}}}
    assert json.loads(pool.tools_json([changed]))[0]["function"]["description"] == "second"


def test_a_tool_hands_out_one_definition_until_it_changes():
    from switchboard.tools.models import ToolInfo

    def tool(description: str, digest: str) -> ToolInfo:
        return ToolInfo(
            qualified_name="a_b",
            server="a",
            name="b",
            description=description,
            input_schema={},
            annotations={},
            definition_hash=digest,
        )

    assert tool("first", "h1").openai_schema() is tool("first", "h1").openai_schema()
    assert tool("second", "h2").openai_schema()["function"]["description"] == "second"


async def test_a_whole_completion_is_read_and_a_page_that_is_no_stream_is_an_error(llm):
    client = LLMClient(environ={"K": "k"}, base_delay_s=0.001, max_attempts=1)
    model = ModelConfig(name="double", model="openai/m", api_base=llm.base_url, api_key_env="K")
    hello = [{"role": "user", "content": "hi"}]
    try:
        llm.enqueue(OddReply(whole=TextReply("all at once")))
        assert await client.complete(model, hello) == "all at once"
        llm.enqueue(OddReply(whole=ToolCallReply([ToolCall("time_now", '{"tz": "UTC"}', id="call_9")])))
        events = [e async for e in client.stream(model, hello, None)]
        assert [(c.id, c.name, c.arguments) for c in events[-1].tool_calls] == [("call_9", "time_now", '{"tz": "UTC"}')]

        llm.enqueue(OddReply(body="<html><body>Please sign in to the proxy</body></html>"))
        with pytest.raises(LLMError) as caught:
            await client.complete(model, hello)
        assert "no server-sent events" in caught.value.message and "text/html" in caught.value.message
    finally:
        await client.aclose()


async def test_the_request_goes_through_the_proxy_the_environment_names(llm, monkeypatch):
    """A real forwarding proxy on a free port: the request reaches the double through it."""
    import asyncio

    seen: list[bytes] = []

    async def forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b"\r\n", 1)[0])
        target = httpx.URL(head.split(b" ")[1].decode())
        up_reader, up_writer = await asyncio.open_connection(target.host, target.port)
        up_writer.write(head)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    proxy = await asyncio.start_server(forward, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    client = LLMClient(environ={"K": "k"}, base_delay_s=0.001, max_attempts=1)
    try:
        model = ModelConfig(name="double", model="openai/m", api_base=llm.base_url, api_key_env="K")
        assert await client.complete(model, [{"role": "user", "content": "hi"}]) == "This is the LLM double."
        assert seen == [f"POST {llm.base_url}/chat/completions HTTP/1.1".encode()]
    finally:
        await client.aclose()
        proxy.close()


def _self_signed(folder):
    """A certificate for 127.0.0.1 and its key, as PEM files."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


async def test_certificates_are_checked_and_ssl_cert_file_is_honoured(tmp_path, monkeypatch):
    """An HTTPS endpoint with a certificate of its own: refused as untrusted, then trusted
    through SSL_CERT_FILE (as httpx's settings say), and the stream read over TLS."""
    import asyncio
    import ssl

    cert_file, key_file = _self_signed(tmp_path)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_file, key_file)
    chunk = {"choices": [{"index": 0, "delta": {"content": "over TLS"}, "finish_reason": "stop"}]}
    body = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
        except (ssl.SSLError, ConnectionError, asyncio.IncompleteReadError):
            pass  # the client refused the certificate
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=tls)
    port = server.sockets[0].getsockname()[1]
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    model = ModelConfig(name="tls", model="openai/m", api_base=f"https://127.0.0.1:{port}/v1", api_key_env="K")
    hello = [{"role": "user", "content": "hi"}]
    try:
        client = LLMClient(environ={"K": "k"}, base_delay_s=0.001, max_attempts=1)
        with pytest.raises(LLMError) as refused:
            await client.complete(model, hello)
        await client.aclose()
        assert type(refused.value).__name__ == "LLMUnavailable", refused.value.message

        monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
        client = LLMClient(environ={"K": "k"}, base_delay_s=0.001, max_attempts=1)
        assert await client.complete(model, hello) == "over TLS"
        await client.aclose()
    finally:
        server.close()


def _sse(*events: str) -> str:
    return "".join(f"data: {event}\n\n" for event in events)


async def test_the_events_of_one_read_come_as_one_delta_and_every_form_of_json_reads(llm):
    """A fast stream's events arrive several to a read: their text goes on as one delta (the
    turn, the websocket and the page then pay once for them). Non-ASCII text, JSON with
    whitespace around it and a tool call's fragments among the text all read as before."""
    client = LLMClient(environ={"K": "k"}, base_delay_s=0.001)
    model = ModelConfig(name="double", model="openai/m", api_base=llm.base_url, api_key_env="K")
    call = {"index": 0, "id": "call_1", "function": {"name": "time_now", "arguments": '{"tz": "UTC"}'}}
    body = _sse(
        json.dumps({"choices": [{"index": 0, "delta": {"content": "héllo "}}]}, ensure_ascii=False),
        '  {"choices": [{"index": 0, "delta": {"content": "wörld"}}]}  ',
        json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}),
        json.dumps({"choices": [{"index": 0, "delta": {"content": " ✓"}, "finish_reason": "tool_calls"}]}),
        "[DONE]",
    )
    try:
        llm.enqueue(OddReply(body=body, content_type="text/event-stream"))
        *deltas, completed = [e async for e in client.stream(model, [{"role": "user", "content": "hi"}], None)]
        assert [d.text for d in deltas] == ["héllo wörld ✓"]
        assert [(c.id, c.name, c.arguments) for c in completed.tool_calls] == [("call_1", "time_now", '{"tz": "UTC"}')]
    finally:
        await client.aclose()


def test_a_read_gives_its_good_events_before_the_one_that_ends_the_stream():
    from switchboard.llm.direct_errors import DirectFailures
    from switchboard.llm.direct_wire import _parsed

    failures = DirectFailures("double", "m", "http://127.0.0.1:9", None, None)
    good = b'{"choices": []}'
    chunks, failure = _parsed([good, b"[1, 2]", b'{"choices": [], "id": "x"}', b"{not json", good], failures)
    assert chunks == [{"choices": []}, {"choices": [], "id": "x"}]  # a value that is no object is skipped
    assert isinstance(failure, LLMError) and "not a chat completion" in failure.message
    chunks, failure = _parsed([good, b'{"error": {"message": "overloaded"}}', good], failures)
    assert chunks == [{"choices": []}] and isinstance(failure, LLMError) and "overloaded" in failure.message
    assert _parsed([b'\xff{"a": 1}'], failures)[1] is not None  # not UTF-8: garbled, as json.loads finds it
