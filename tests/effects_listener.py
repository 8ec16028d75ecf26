"""The loopback listener of the effects tier: where a hostile input's secrets would be sent.

Runs inside the disposable namespace of `effects_driver.py` (standard library only).
"""

from __future__ import annotations

import re
import socket
import ssl
import threading


class Listener:
    """Loopback ports 80 and 443 (TLS): every byte received goes to the capture file.

    Unprivileged (no CAP_NET_BIND_SERVICE in the namespace) it listens on 8080 instead and
    clients reach it as their HTTP(S) proxy: a CONNECT is answered and then spoken TLS to
    with the test certificate, so the bytes are seen all the same."""

    PROXY = 8080

    def __init__(self, cert: str, key: str, capture: str) -> None:
        self.capture = capture
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.load_cert_chain(cert, key)
        self.proxy = False
        try:
            ports = [(self.bound(80), False), (self.bound(443), True)]
        except PermissionError:
            ports, self.proxy = [(self.bound(self.PROXY), False)], True
        for sock, tls in ports:
            threading.Thread(target=self.serve, args=(sock, tls), daemon=True).start()

    @staticmethod
    def bound(port: int) -> socket.socket:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(16)
        return sock

    def env(self) -> dict[str, str]:
        url = f"http://127.0.0.1:{self.PROXY}"
        return {k: url for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                                 "all_proxy", "ALL_PROXY")} if self.proxy else {}

    def serve(self, sock: socket.socket, tls: bool) -> None:
        while True:
            conn, _ = sock.accept()
            threading.Thread(target=self.take, args=(conn, tls), daemon=True).start()

    def take(self, conn: socket.socket, tls: bool) -> None:
        try:
            if tls:
                conn = self.tls.wrap_socket(conn, server_side=True)
            conn.settimeout(2)
            seen, answered = b"", False
            while data := conn.recv(65536):
                with open(self.capture, "ab") as f:
                    f.write(data)
                seen += data
                head, _, body = seen.partition(b"\r\n\r\n")
                if not _ or answered:
                    continue
                if head.startswith(b"CONNECT "):  # a proxied https request: speak TLS
                    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    conn = self.tls.wrap_socket(conn, server_side=True)
                    seen = b""
                    continue
                # Answer like a web server, so clients send (and finish) their upload.
                if b"100-continue" in head.lower() and not body:
                    conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                    continue
                length = re.search(rb"(?i)content-length:\s*(\d+)", head)
                if length is None or len(body) >= int(length.group(1)):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\necho hi\n")
                    answered = True
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()
