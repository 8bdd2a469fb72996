"""A Herald webhook receiver on Python's standard library alone.

    HERALD_WEBHOOK_SECRET=whsec_... PORT=8000 python3 receiver.py
"""
import hashlib
import hmac
import json
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 300


def verify(raw_body, timestamp, signature_header, secrets, now=None):
    """Raises ValueError unless Herald signed raw_body (bytes) with one of secrets."""
    if not (timestamp.isascii() and timestamp.isdigit()):
        raise ValueError("X-Service-Timestamp is missing or not Unix seconds")
    now = time.time() if now is None else now
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        raise ValueError("X-Service-Timestamp is more than 300 s from now: a replay, or a clock is wrong")
    signed = timestamp.encode() + b"." + raw_body
    entries = signature_header.replace(",", " ").split()
    for secret in secrets:
        expected = "v1=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
        for entry in entries:
            if hmac.compare_digest(expected.encode(), entry.encode()):
                return
    raise ValueError("no v1 signature matches: a wrong secret, or the body is not the raw body")


SECRETS = [s for s in (os.environ["HERALD_WEBHOOK_SECRET"], os.environ.get("HERALD_WEBHOOK_SECRET_PREVIOUS")) if s]


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        raw_body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            verify(raw_body, self.headers.get("X-Service-Timestamp", ""),
                   self.headers.get("X-Service-Signature", ""), SECRETS)
        except ValueError as error:
            return self.answer(400, str(error))
        event = json.loads(raw_body)
        # Skip event ids you have processed already; ignore types you do not know.
        print("received", event["type"], event["id"], flush=True)
        self.answer(204)

    def answer(self, status, text=""):
        self.send_response(status)
        if text:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(text.encode())))
        self.end_headers()
        self.wfile.write(text.encode())


ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Receiver).serve_forever()
