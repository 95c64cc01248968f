"""`SWITCHBOARD_FILES_URL` names the file store: a folder by default, a bucket with s3://."""

from __future__ import annotations

import io

import pytest

from switchboard.errors import ConfigError, NotFound
from switchboard.files.backends import LocalFiles, S3Files, open_files


def test_unset_or_a_path_is_a_private_folder(tmp_path):
    files = open_files(None, tmp_path / "files")
    assert isinstance(files, LocalFiles) and (tmp_path / "files").stat().st_mode & 0o777 == 0o700
    assert isinstance(open_files(f"file://{tmp_path}/other", tmp_path), LocalFiles)
    files.write("a.bin", io.BytesIO(b"x" * 3_000_000))  # a file object is copied in parts
    assert (tmp_path / "files" / "a.bin").stat().st_mode & 0o777 == 0o600
    assert len(files.read("a.bin")) == 3_000_000
    with pytest.raises(NotFound):
        files.read("missing.bin")


def test_s3_urls_name_bucket_and_prefix():
    files = open_files("s3://team-bucket/switchboard/prod", None)  # type: ignore[arg-type]
    assert isinstance(files, S3Files) and files.description == "s3://team-bucket/switchboard/prod"


@pytest.mark.parametrize("url", ["s3:///no-bucket", "ftp://host/files", "gs://bucket"])
def test_other_urls_are_a_config_error_that_says_what_works(url):
    with pytest.raises(ConfigError, match="s3://bucket/prefix"):
        open_files(url, None)  # type: ignore[arg-type]
