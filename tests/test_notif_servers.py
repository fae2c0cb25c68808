"""Local servers that receive notifications in the tests (helpers, no tests of their own): an HTTP
server that records JSON POSTs and a minimal SMTP server (RFC 5321 subset smtplib speaks)."""

from __future__ import annotations

import email
import json
import socket
import socketserver
import threading
import time
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        server: HookServer = self.server.owner  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with server.lock:
            server.attempts[self.path] = server.attempts.get(self.path, 0) + 1
            failing = server.fail_first.get(self.path, 0) >= server.attempts[self.path]
        if failing:
            self.send_response(500)
            self.end_headers()
            return
        with server.lock:
            server.received.append((self.path, json.loads(body), time.monotonic()))
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


class HookServer:
    def __init__(self, fail_first: dict[str, int] | None = None) -> None:
        self.received: list[tuple[str, dict[str, Any], float]] = []
        self.attempts: dict[str, int] = {}
        self.fail_first = fail_first or {}
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
        self.httpd.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> HookServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [b for p, b, _ in self.received if p == path]


class _SMTPHandler(socketserver.StreamRequestHandler):
    def _say(self, line: str) -> None:
        self.wfile.write(line.encode() + b"\r\n")

    def handle(self) -> None:
        server: SMTPServer = self.server.owner  # type: ignore[attr-defined]
        self._say("220 localhost groupscope-test ESMTP")
        sender, rcpts, data, in_data = "", [], [], False
        while True:
            line = self.rfile.readline()
            if not line:
                return
            if in_data:
                if line.rstrip(b"\r\n") == b".":
                    with server.lock:
                        server.messages.append(
                            (sender, list(rcpts), email.message_from_bytes(b"".join(data)), time.monotonic())
                        )
                    sender, rcpts, data, in_data = "", [], [], False
                    self._say("250 OK queued")
                else:
                    data.append(line[1:] if line.startswith(b"..") else line)
                continue
            cmd = line.decode(errors="replace").strip()
            verb = cmd.split(" ", 1)[0].upper()
            if verb == "EHLO":
                self.wfile.write(b"250-localhost\r\n250 8BITMIME\r\n")
            elif verb == "HELO" or verb in ("RSET", "NOOP"):
                self._say("250 OK")
            elif verb == "MAIL":
                sender = cmd.split(":", 1)[1].strip().strip("<>").split(">")[0]
                self._say("250 OK")
            elif verb == "RCPT":
                rcpts.append(cmd.split(":", 1)[1].strip().strip("<>"))
                self._say("250 OK")
            elif verb == "DATA":
                in_data = True
                self._say("354 End data with <CR><LF>.<CR><LF>")
            elif verb == "QUIT":
                self._say("221 Bye")
                return
            else:
                self._say("502 Command not implemented")


class _ThreadingTCP(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class SMTPServer:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message, float]] = []
        self.lock = threading.Lock()
        self.server = _ThreadingTCP(("127.0.0.1", 0), _SMTPHandler)
        self.server.owner = self  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def __enter__(self) -> SMTPServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(cond, timeout: float = 20.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def three_channels(hooks: HookServer, smtp: SMTPServer, backoff_s: float) -> dict:
    """An alerts configuration with a dead webhook, a live one and email: a failing channel must
    never hold back the others."""
    return {
        "notify": {"retries": 2, "backoff_s": backoff_s},
        "notifiers": [
            {"name": "dead", "type": "webhook", "url": f"http://127.0.0.1:{closed_port()}/", "timeout_s": 1},
            {"name": "hook", "type": "webhook", "url": hooks.url + "/hook"},
            {"name": "mail", "type": "email", "host": "127.0.0.1", "port": smtp.port, "to": ["ops@x"]},
        ],
    }
