"""Users' credentials at rest: sealed with a key from the app's secret or a private key file,
and bound to their server, user and kind."""

from __future__ import annotations

from switchboard.credentials import SecretBox, credential_key


def test_a_sealed_value_opens_only_for_its_own_row(tmp_path):
    box = SecretBox(credential_key(None, tmp_path))
    sealed = box.seal("search", "alice@x", "token", "tok-123")
    assert "tok-123" not in sealed
    assert box.open("search", "alice@x", "token", sealed) == "tok-123"
    assert box.open("search", "bob@x", "token", sealed) is None  # a row copied onto another user
    assert box.open("other", "alice@x", "token", sealed) is None
    assert box.open("search", "alice@x", "oauth_tokens", sealed) is None


def test_the_key_file_is_private_and_stable_and_a_secret_gives_another_key(tmp_path):
    first = credential_key(None, tmp_path)
    assert credential_key(None, tmp_path) == first
    assert (tmp_path / "credentials.key").stat().st_mode & 0o777 == 0o600
    from_secret = credential_key("s3cret", tmp_path)
    assert from_secret != first and credential_key("s3cret", tmp_path / "elsewhere") == from_secret
    sealed = SecretBox(first).seal("a", "b", "token", "v")
    assert SecretBox(from_secret).open("a", "b", "token", sealed) is None  # changed key: connect again
