"""DPoP proofs (RFC 9449): their claims, a signature that verifies with the public key in their
own header, the access token hash, and a key that survives the vault but never shows; and a
user's provider binding tokens only where the authorization server offers DPoP and binds them."""

from __future__ import annotations

import base64
import hashlib
import json
import time

import httpx2
import pytest
from joserfc import jws, jwt
from joserfc.jwk import import_key
from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata

from switchboard.config.models import ServerConfig
from switchboard.tools.oauth.dpop import SUPPORTED_ALGS, DPoPKey, access_token_hash, htu
from switchboard.tools.oauth.flow import SignIns
from switchboard.tools.oauth.vault import MemoryVault


def _registry() -> jws.JWSRegistry:
    registry = jws.JWSRegistry(algorithms=list(SUPPORTED_ALGS))
    registry.max_header_length = 2048  # an RSA key's header is longer than joserfc's default allows
    return registry


def verified(proof: str) -> tuple[dict, dict]:
    """(header, claims) of a proof, checked as a server checks one: with the key it carries."""
    header = jws.extract_compact(proof.encode(), registry=_registry()).protected
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    token = jwt.decode(proof, import_key(header["jwk"]), algorithms=[header["alg"]], registry=_registry())
    return token.header, token.claims


@pytest.mark.parametrize("alg", SUPPORTED_ALGS)
def test_a_proof_names_its_request_and_verifies_with_its_own_key(alg):
    key = DPoPKey.generate(alg)
    before = int(time.time())
    header, claims = verified(key.proof("post", "https://as.example/token?x=1#frag"))
    assert header["alg"] == alg and header["jwk"] == key.public_jwk()
    assert claims["htm"] == "POST" and claims["htu"] == "https://as.example/token"  # no query, no fragment
    assert before <= claims["iat"] <= int(time.time()) and len(claims["jti"]) >= 16
    assert "ath" not in claims and "nonce" not in claims  # a token request: no access token yet


def test_a_resource_proof_carries_the_token_hash_and_the_nonce():
    key = DPoPKey.generate()
    _, claims = verified(key.proof("GET", "https://mcp.example/mcp", access_token="tok-123", nonce="n-1"))
    expected = base64.urlsafe_b64encode(hashlib.sha256(b"tok-123").digest()).rstrip(b"=").decode()
    assert claims["ath"] == expected == access_token_hash("tok-123") and claims["nonce"] == "n-1"


def test_each_proof_is_fresh():
    key = DPoPKey.generate()
    proofs = [verified(key.proof("POST", "https://mcp.example/mcp", access_token="t"))[1]["jti"] for _ in range(50)]
    assert len(set(proofs)) == 50


def test_another_key_cannot_pass_for_this_one():
    key, other = DPoPKey.generate(), DPoPKey.generate()
    header = jws.extract_compact(key.proof("POST", "https://x/mcp").encode()).protected
    forged = other.proof("POST", "https://x/mcp")
    with pytest.raises(Exception):  # noqa: B017 - joserfc's BadSignatureError
        jwt.decode(forged, import_key(header["jwk"]), algorithms=["ES256"])
    assert import_key(header["jwk"]).thumbprint() == key.thumbprint() != other.thumbprint()


def test_the_sealed_key_comes_back_the_same_and_never_shows():
    key = DPoPKey.generate()
    sealed = key.sealed()
    again = DPoPKey.from_sealed(json.loads(json.dumps(sealed)))
    assert again.thumbprint() == key.thumbprint() and again.alg == key.alg
    _, claims = verified(again.proof("POST", "https://x/token"))
    assert claims["htm"] == "POST"
    assert sealed["jwk"]["d"] not in repr(key) and "jkt=" in repr(key)


def test_the_algorithm_follows_the_authorization_server():
    assert DPoPKey.choose(["RS256", "ES256"]) == "ES256"  # the host's preference among those offered
    assert DPoPKey.choose(["PS256"]) == "PS256"
    assert DPoPKey.choose(["HS256", "none"]) is None and DPoPKey.choose([]) is None and DPoPKey.choose(None) is None
    with pytest.raises(ValueError):
        DPoPKey.generate("HS256")


def test_htu_keeps_scheme_host_and_path():
    assert htu("http://127.0.0.1:8080/mcp/?session=1") == "http://127.0.0.1:8080/mcp/"


@pytest.mark.parametrize(
    ("offered", "answered", "bound"),
    [
        (None, "Bearer", False),  # an authorization server without DPoP: bearer, as before
        (["ES256"], "DPoP", True),
        (["ES256"], "Bearer", False),  # it took the proof but did not bind the token: used as a bearer token
        (["HS256"], "Bearer", False),  # nothing the host signs with
    ],
)
async def test_a_token_is_bound_only_when_the_server_offers_and_binds(offered, answered, bound):
    vault = MemoryVault()
    config = ServerConfig(url="http://127.0.0.1:9/mcp", auth={"type": "oauth"})
    provider = SignIns(vault, "http://127.0.0.1:8000/oauth/callback", dev=True).session_auth("s", config, "u")
    provider.context.oauth_metadata = OAuthMetadata(
        issuer="http://127.0.0.1:9",
        token_endpoint="http://127.0.0.1:9/token",
        authorization_endpoint="http://127.0.0.1:9/authorize",
    )
    provider.context.client_info = OAuthClientInformationFull(
        client_id="c", redirect_uris=["http://127.0.0.1:8000/oauth/callback"]
    )
    provider.dpop_algs = offered
    provider.use_dpop_if_offered()
    request = await provider._exchange_token_authorization_code("code", "verifier")
    assert ("DPoP" in request.headers) == (DPoPKey.choose(offered) is not None)
    answer = httpx2.Response(
        200, json={"access_token": "tok", "token_type": answered, "expires_in": 60}, request=request
    )
    await provider._handle_token_response(answer)
    stored = json.loads(await vault.get("s", "u", "oauth_tokens"))
    assert ("dpop_key" in stored) == bound and stored["token"]["access_token"] == "tok"
    mcp = httpx2.Request("POST", "http://127.0.0.1:9/mcp?x=1")
    provider._add_auth_header(mcp)
    assert mcp.headers["Authorization"] == ("DPoP tok" if bound else "Bearer tok") and ("DPoP" in mcp.headers) == bound
    if bound:
        _, claims = verified(mcp.headers["DPoP"])
        assert claims["htu"] == "http://127.0.0.1:9/mcp" and claims["ath"] == access_token_hash("tok")
