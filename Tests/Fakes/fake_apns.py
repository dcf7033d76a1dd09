"""A fake Apple Push Notification service (provider API, token authentication) for the APNs sender's
tests: HTTP/2 ONLY (TLS with ALPN h2, no http/1.1), checking what Apple checks.

Usage: fake_apns.py CERT.pem KEY.pem PUBLIC_KEY TEAM_ID KEY_ID TOPIC
  PUBLIC_KEY: the signing key's public point, uncompressed, base64url (the .p8 key's public half).
Prints `READY <port>`; exits with its parent.

POST /3/device/<hex token>: verifies
  - the bearer JWT: header alg ES256 and kid = KEY_ID, claims iss = TEAM_ID and iat, the ES256
    signature under PUBLIC_KEY (403 MissingProviderToken / InvalidProviderToken), iat not older than
    an hour by the fake's clock (403 ExpiredProviderToken) nor in its future;
  - apns-topic = TOPIC (400 MissingTopic / BadTopic), apns-push-type (400 InvalidPushType),
    apns-priority 5 or 10 (400 BadPriority), apns-expiration digits (400 BadExpirationDate),
    apns-collapse-id at most 64 bytes (400 BadCollapseId), the token 64..200 hex digits
    (400 BadDeviceToken), a JSON payload with `aps` of at most 4096 bytes (400 PayloadEmpty /
    413 PayloadTooLarge); a `background` push with priority 5 (400 BadPriority) and an `aps` of
    content-available 1 without alert, sound or badge (400 BadPayload);
  then answers the token's next scripted response, else 200 with an apns-id.
Every request is recorded with the status it got.

Control: POST /control/clock {"now": unix seconds}; POST /control/respond {"token": t, "responses":
[{"status": 410, "reason": "Unregistered"}, {"status": 429, "reason": "TooManyRequests",
"retry_after": 7}, …]} (consumed one per request to that token); GET /received → {"requests": […]}.
"""

import base64
import json
import re
import sys
import time
import uuid

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils

import fake_service

TOKEN_AGE_LIMIT = 3600
MAX_PAYLOAD = 4096
PUSH_TYPES = {"alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity"}

certfile, keyfile, public_key_b64, team_id, key_id, topic = sys.argv[1:7]


def b64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64(public_key_b64))
state = {"now": int(time.time()), "requests": []}
script = fake_service.Script()


def check_jwt(authorization):
    """None when the provider token is acceptable now, else the 403 reason."""
    if not authorization.startswith("bearer "):
        return "MissingProviderToken"
    try:
        header_b64, claims_b64, signature_b64 = authorization[len("bearer "):].split(".")
        header, claims, raw = json.loads(b64(header_b64)), json.loads(b64(claims_b64)), b64(signature_b64)
        if header.get("alg") != "ES256" or header.get("kid") != key_id or claims.get("iss") != team_id:
            return "InvalidProviderToken"
        if len(raw) != 64 or not isinstance(claims.get("iat"), int):
            return "InvalidProviderToken"
        der = utils.encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public_key.verify(der, f"{header_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    except (ValueError, InvalidSignature, json.JSONDecodeError):
        return "InvalidProviderToken"
    if claims["iat"] > state["now"] + 60:
        return "InvalidProviderToken"
    if state["now"] - claims["iat"] > TOKEN_AGE_LIMIT:
        return "ExpiredProviderToken"
    return None


def check_request(path, headers, body):
    """(status, reason) for a request that breaks a rule, else None."""
    match = re.fullmatch(r"/3/device/([0-9a-fA-F]+)", path)
    if not match or not 64 <= len(match[1]) <= 200:
        return 400, "BadDeviceToken"
    reason = check_jwt(headers.get("authorization", ""))
    if reason:
        return 403, reason
    if "apns-topic" not in headers:
        return 400, "MissingTopic"
    if headers["apns-topic"] != topic:
        return 400, "BadTopic"
    if headers.get("apns-push-type") not in PUSH_TYPES:
        return 400, "InvalidPushType"
    if headers.get("apns-priority", "10") not in ("5", "10"):
        return 400, "BadPriority"
    if not re.fullmatch(r"[0-9]+", headers.get("apns-expiration", "0")):
        return 400, "BadExpirationDate"
    if len(headers.get("apns-collapse-id", "").encode()) > 64:
        return 400, "BadCollapseId"
    if not body:
        return 400, "PayloadEmpty"
    if len(body) > MAX_PAYLOAD:
        return 413, "PayloadTooLarge"
    try:
        aps = json.loads(body).get("aps")
        if not isinstance(aps, dict):
            return 400, "BadPayload"
    except (ValueError, AttributeError):
        return 400, "BadPayload"
    if headers["apns-push-type"] == "background":
        # Apple: a background notification has priority 5, content-available 1, no alert, sound or badge.
        if headers.get("apns-priority", "10") != "5":
            return 400, "BadPriority"
        if aps.get("content-available") != 1 or any(k in aps for k in ("alert", "sound", "badge")):
            return 400, "BadPayload"
    return None


async def handle(scope, path, method, body, send):
    if path == "/received" and method == "GET":
        return await fake_service.respond(send, 200, {"requests": state["requests"]})
    if scope["http_version"] != "2":
        return await fake_service.respond(send, 505, {"reason": "HTTP/2 only"})
    if method != "POST":
        return await fake_service.respond(send, 405, {"reason": "MethodNotAllowed"})
    headers = fake_service.headers_of(scope)
    token = path.rsplit("/", 1)[-1]
    record = {
        "token": token,
        "headers": {k: v for k, v in headers.items() if k.startswith("apns-") or k == "authorization"},
        "payload": json.loads(body) if body.startswith(b"{") else None,
        "http_version": scope["http_version"],
    }
    state["requests"].append(record)
    problem = check_request(path, headers, body)
    if problem is None:
        scripted = script.next(token)
        if scripted:
            problem = (scripted["status"], scripted.get("reason", ""))
            extra = [("retry-after", scripted["retry_after"])] if "retry_after" in scripted else []
            record["status"] = problem[0]
            document = {"reason": problem[1]}
            if problem[0] == 410:
                document["timestamp"] = state["now"] * 1000
            return await fake_service.respond(send, problem[0], document, extra)
    if problem:
        record["status"] = problem[0]
        return await fake_service.respond(send, problem[0], {"reason": problem[1]})
    record["status"] = 200
    return await fake_service.respond(send, 200, None, [("apns-id", str(uuid.uuid4()).upper())])


app = fake_service.provider_app(handle, state, script)


if __name__ == "__main__":
    fake_service.run(app, fake_service.listening_socket(), certfile, keyfile, ["h2"])
