"""``llmdebate serve``: TLS passed to uvicorn and really served, forwarded headers off unless a
proxy is named, and a warning when judges' links would cross a network in clear."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from judging_study import REPO, assign, free_port, make_run, write_judges

from llmdebate.commands.serve import command, loopback


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("serve"), ["direct"], limit=2)


def _certificate(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl)."""
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed to make a test certificate"
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def _serve(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> tuple[Any, dict[str, Any]]:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: seen.update(kw, app=app))
    res = CliRunner().invoke(command, args)
    return res, seen


def test_serve_options_reach_uvicorn_and_warn_in_clear(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    res, kw = _serve(monkeypatch, [str(run_dir)])
    assert res.exit_code == 0 and "warning" not in res.output
    assert kw["host"] == "127.0.0.1" and kw["proxy_headers"] is False and kw["access_log"] is False
    assert kw["ssl_certfile"] is None
    res, kw = _serve(monkeypatch, [str(run_dir), "--host", "0.0.0.0"])
    assert res.exit_code == 0
    assert "warning: serving 0.0.0.0 without TLS" in res.output and "docs/judging.md" in res.output
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("x")
    key.write_text("x")
    args = [str(run_dir), "--host", "0.0.0.0", "--ssl-certfile", str(cert)]
    res, kw = _serve(monkeypatch, [*args, "--ssl-keyfile", str(key), "--trusted-proxy", "10.0.0.2"])
    assert res.exit_code == 0 and "warning" not in res.output and "https://0.0.0.0" in res.output
    assert kw["ssl_certfile"] == str(cert) and kw["ssl_keyfile"] == str(key)
    assert kw["app"].state.study.trusted == {"10.0.0.2"}
    res, _ = _serve(monkeypatch, args)
    assert res.exit_code == 2 and "--ssl-certfile and --ssl-keyfile go together" in res.output
    res, _ = _serve(monkeypatch, [str(run_dir), "--trusted-proxy", "proxy.lan"])
    assert res.exit_code == 2 and "--trusted-proxy" in res.output
    assert loopback("127.0.0.5") and loopback("::1") and loopback("localhost")
    assert not loopback("0.0.0.0") and not loopback("192.168.1.2") and not loopback("lab.example")


def test_serve_over_tls_sets_a_secure_cookie(run_dir: Path, tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["a"]), 1)
    port = free_port()
    code = "import sys; from llmdebate.cli import main; sys.exit(main(sys.argv[1:]))"
    args = ["serve", str(run_dir), "--port", str(port)]
    args += ["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"https://127.0.0.1:{port}"
    try:
        with httpx.Client(
            base_url=base, verify=ssl.create_default_context(cafile=str(cert)), timeout=10
        ) as c:
            deadline = time.monotonic() + 90
            while True:
                assert proc.poll() is None and time.monotonic() < deadline
                try:
                    c.get("/")
                    break
                except httpx.TransportError:
                    time.sleep(0.2)
            link = links["a"]
            r = c.get(link[link.index("/login/") :], follow_redirects=False)
            assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
            assert c.get("/").status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/", timeout=5)  # no clear-text answer
    finally:
        proc.terminate()
        proc.wait(10)
