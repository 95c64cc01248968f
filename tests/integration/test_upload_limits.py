"""`POST /api/files` through the real app: the file-count quota (empty files
included), the byte quota, and the stored type of files browsers send untyped."""

from __future__ import annotations

import pytest

from tests.support.harness import make_settings, running_app, write_config


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("uploads")
    write_config(tmp / "defaults")
    settings = make_settings(
        tmp, auth_mode="proxy", proxy_secret="s", max_uploads_per_user=3, max_upload_bytes_per_user=1000
    )
    with running_app(settings) as (test_client, _):
        yield test_client


def who(email):
    return {"x-user-email": email, "x-proxy-secret": "s"}


def post(client, email, name, data, mime):
    return client.post("/api/files", headers=who(email), files={"file": (name, data, mime)})


def test_empty_files_count_against_a_file_quota(client):
    for _ in range(3):
        assert post(client, "empty@example.com", "empty.txt", b"", "text/plain").status_code == 200
    refused = post(client, "empty@example.com", "empty.txt", b"", "text/plain")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert "the limit is 3" in error["message"] and "SWITCHBOARD_MAX_UPLOADS_PER_USER" in error["action"]
    assert post(client, "other@example.com", "empty.txt", b"", "text/plain").status_code == 200


def test_the_byte_quota_still_holds(client):
    assert post(client, "big@example.com", "a.bin", b"x" * 700, "application/octet-stream").status_code == 200
    refused = post(client, "big@example.com", "b.bin", b"x" * 400, "application/octet-stream")
    assert refused.status_code == 400 and "storage limit" in refused.json()["error"]["message"]


@pytest.mark.parametrize("declared", ["application/octet-stream", "", "application/vnd.ms-excel"])
def test_a_csv_sent_without_a_useful_type_is_stored_as_csv(client, declared):
    response = post(
        client,
        f"csv-{declared.replace('/', '-') or 'none'}@example.com",
        "sales.csv",
        b"region,total\nnorth,3\n",
        declared,
    )
    assert response.status_code == 200 and response.json()["mime"] == "text/csv"
