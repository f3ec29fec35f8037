"""Which etcd user a client authenticates as: the password file given, else the one `lahar up` wrote
beside the NATS credentials file; a bad file is an error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.store.etcd_auth import EtcdAuthError, EtcdCredentials, client_etcd_credentials


def test_the_password_file_beside_a_stack_credentials_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "admin.nk").write_text("seed")
    (tmp_path / "admin.etcd").write_text("pw\n")
    assert client_etcd_credentials(str(tmp_path / "admin.nk"), None, None) == EtcdCredentials("admin", "pw")


def test_an_explicit_file_wins_and_the_user_defaults_to_admin(tmp_path: Path) -> None:
    (tmp_path / "admin.etcd").write_text("beside\n")
    (tmp_path / "other").write_text("given\n")
    got = client_etcd_credentials(str(tmp_path / "admin.nk"), None, str(tmp_path / "other"))
    assert got == EtcdCredentials("admin", "given")
    named = client_etcd_credentials(None, "ops", str(tmp_path / "other"))
    assert named == EtcdCredentials("ops", "given")


def test_no_password_file_means_no_authentication(tmp_path: Path) -> None:
    (tmp_path / "admin.nk").write_text("seed")
    assert client_etcd_credentials(str(tmp_path / "admin.nk"), None, None) is None
    assert client_etcd_credentials(None, None, None) is None


def test_an_unreadable_or_empty_password_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(EtcdAuthError, match=r"missing\.etcd"):
        EtcdCredentials.from_file("admin", tmp_path / "missing.etcd")
    (tmp_path / "empty.etcd").write_text("\n")
    with pytest.raises(EtcdAuthError, match="empty"):
        EtcdCredentials.from_file("admin", tmp_path / "empty.etcd")


def test_the_password_is_never_shown() -> None:
    assert "s3cret" not in repr(EtcdCredentials("admin", "s3cret"))
