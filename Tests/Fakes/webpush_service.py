"""A fake Web Push service (RFC 8030) for the Web Push sender's tests (TestSupport's PythonService
starts it).

Serves HTTPS with hypercorn on a free loopback port (TLS with the test CA's server certificate, ALPN
h2 and http/1.1), prints one line `READY <port>` to stdout and runs until killed (or until its parent
process goes away).

Usage: webpush_service.py CERT.pem KEY.pem

The fake is the user agent's side too: it makes each subscription's P-256 key pair and auth secret
itself (with `cryptography`, an implementation independent of the server's), so it can decrypt
what it receives.

Endpoints:
  POST /subscriptions/<id>   new subscription <id>: a fresh key pair and auth secret; answers
                             {"endpoint": "https://127.0.0.1:<port>/push/<id>", "p256dh", "auth"}
                             (base64url, unpadded, as PushSubscription.toJSON() gives them)
  POST /push/<id>            a push message. Checked, in order (any failure answers 404 for an
                             unknown id, 401 for VAPID, 400 otherwise, with {"error": …}, and is
                             recorded with that error):
                               - Authorization: `vapid t=<jwt>, k=<key>`: the JWT's header is
                                 {"typ":"JWT","alg":"ES256"}, its ES256 signature verifies with k,
                                 aud = this service's origin, now < exp <= now + 24 h, sub is
                                 mailto: or https:
                               - Content-Encoding: aes128gcm, and a TTL of digits
                               - the body decrypts (http_ece, aes128gcm) with the subscription's
                                 private key and auth secret, to JSON
                             then answered with the subscription's configured status (201 unless
                             set) and recorded.
  POST /control/<id>         {"status": 410} or {"status": 503, "retry_after": "7"}: how later
                             pushes to <id> are answered (until changed)
  POST /clock                {"now": <unix seconds>}: the time the JWT's exp is checked against
                             (the tests' injected clock; the wall clock until set)
  GET  /received             [{"id", "status", "error", "headers": {lower-case name: value},
                               "vapid_key", "jwt": {claims}, "payload": <decrypted JSON>,
                               "received_at": <this machine's Unix time, seconds>}] in arrival
                             order
"""

import base64
import json
import os
import re
import sys
import time

import http_ece
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from fake_service import headers_of, lifespan, listening_socket, read_body, respond, run

MAX_VALIDITY_SECONDS = 86_400  # RFC 8292 §2

subscriptions = {}  # id -> {"key": private key, "auth": bytes, "status": int, "retry_after": str|None}
received = []
clock = {"now": None}
origin = {"value": None}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Refused(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def verify_vapid(authorization):
    """The VAPID header's public key (base64url) and JWT claims, or Refused."""
    match = re.fullmatch(r"vapid t=([A-Za-z0-9_.-]+), k=([A-Za-z0-9_-]+)", authorization or "")
    if not match:
        raise Refused(401, f"no vapid authorization: {authorization!r}")
    token, key_text = match.group(1), match.group(2)
    try:
        key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key_text))
    except ValueError as error:
        raise Refused(401, f"k is not a P-256 point: {error}")
    parts = token.split(".")
    if len(parts) != 3:
        raise Refused(401, "JWT is not three parts")
    header = json.loads(unb64url(parts[0]))
    claims = json.loads(unb64url(parts[1]))
    if header != {"typ": "JWT", "alg": "ES256"}:
        raise Refused(401, f"JWT header {header}")
    signature = unb64url(parts[2])
    if len(signature) != 64:
        raise Refused(401, "ES256 signature is not 64 bytes")
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise Refused(401, "JWT signature does not verify with k")
    now = clock["now"] if clock["now"] is not None else int(time.time())
    if claims.get("aud") != origin["value"]:
        raise Refused(401, f"aud {claims.get('aud')!r} is not {origin['value']!r}")
    exp = claims.get("exp")
    if not isinstance(exp, int) or not (now < exp <= now + MAX_VALIDITY_SECONDS):
        raise Refused(401, f"exp {exp!r} not within 24 h after now {now}")
    sub = claims.get("sub", "")
    if not (isinstance(sub, str) and (sub.startswith("mailto:") or sub.startswith("https://"))):
        raise Refused(401, f"sub {sub!r}")
    return key_text, claims


async def push(subscription_id, headers, body, send):
    entry = {"id": subscription_id, "headers": headers, "status": None, "error": None, "received_at": time.time()}
    received.append(entry)
    try:
        subscription = subscriptions.get(subscription_id)
        if subscription is None:
            raise Refused(404, "no such subscription")
        entry["vapid_key"], entry["jwt"] = verify_vapid(headers.get("authorization"))
        if headers.get("content-encoding") != "aes128gcm":
            raise Refused(400, f"content-encoding {headers.get('content-encoding')!r}")
        if not re.fullmatch(r"[0-9]+", headers.get("ttl", "")):
            raise Refused(400, f"TTL {headers.get('ttl')!r}")
        try:
            plaintext = http_ece.decrypt(
                body, private_key=subscription["key"], auth_secret=subscription["auth"], version="aes128gcm")
            entry["payload"] = json.loads(plaintext)
        except Exception as error:  # noqa: BLE001 - any failure to decrypt is the sender's
            raise Refused(400, f"cannot decrypt: {error!r}")
    except Refused as refusal:
        entry["status"], entry["error"] = refusal.status, str(refusal)
        await respond(send, refusal.status, {"error": str(refusal)})
        return
    status = subscription["status"]
    entry["status"] = status
    extra = [("retry-after", subscription["retry_after"])] if subscription.get("retry_after") else []
    if 200 <= status < 300:
        extra.append(("location", f"{origin['value']}/message/{len(received)}"))
    await respond(send, status, {"status": status}, extra)


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return await lifespan(receive, send)
    path, method = scope["path"], scope["method"]
    headers = headers_of(scope)
    body = await read_body(receive)
    if method == "POST" and path.startswith("/subscriptions/"):
        subscription_id = path[len("/subscriptions/"):]
        key = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        subscriptions[subscription_id] = {"key": key, "auth": auth, "status": 201, "retry_after": None}
        point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        await respond(send, 201, {
            "endpoint": f"{origin['value']}/push/{subscription_id}", "p256dh": b64url(point), "auth": b64url(auth)})
    elif method == "POST" and path.startswith("/push/"):
        await push(path[len("/push/"):], headers, body, send)
    elif method == "POST" and path.startswith("/control/"):
        subscription = subscriptions.get(path[len("/control/"):])
        if subscription is None:
            await respond(send, 404, {"error": "no such subscription"})
            return
        document = json.loads(body)
        subscription["status"] = int(document["status"])
        subscription["retry_after"] = document.get("retry_after")
        await respond(send, 200, {"ok": True})
    elif method == "POST" and path == "/clock":
        clock["now"] = int(json.loads(body)["now"])
        await respond(send, 200, {"ok": True})
    elif method == "GET" and path == "/received":
        await respond(send, 200, received)
    else:
        await respond(send, 404, {"error": "not found"})


def main():
    certfile, keyfile = sys.argv[1], sys.argv[2]
    sock = listening_socket()
    origin["value"] = f"https://127.0.0.1:{sock.getsockname()[1]}"
    run(app, sock, certfile, keyfile, ["h2", "http/1.1"])


if __name__ == "__main__":
    main()
