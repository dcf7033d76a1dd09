"""A fake Firebase Cloud Messaging (HTTP v1) with its Google OAuth2 token endpoint, for the FCM
sender's tests. TLS with ALPN h2 and http/1.1.

Usage: fake_fcm.py CERT.pem KEY.pem PUBLIC_KEY.pem CLIENT_EMAIL PROJECT_ID
  PUBLIC_KEY.pem: the service account's RSA public key (SubjectPublicKeyInfo PEM file).
Prints `READY <port>`; exits with its parent. The token URI is https://127.0.0.1:<port>/token.

POST /token (RFC 7523 JWT-bearer grant, form-encoded): grant_type must be
  urn:ietf:params:oauth:grant-type:jwt-bearer; the assertion's RS256 signature must verify under
  PUBLIC_KEY, with alg RS256, iss = CLIENT_EMAIL, scope = the firebase.messaging scope, aud = the
  token URI, exp = iat + 3600 at most, iat not in the future nor past exp by the fake's clock
  (else 400 invalid_grant). Answers a fresh access token with expires_in 3599.
POST /v1/projects/PROJECT_ID/messages:send: the bearer must be a token this fake issued, not
  revoked and not expired by its clock (else 401 UNAUTHENTICATED); the body must be a message with
  `token`, a `notification` (title and body) or non-empty `data` (a data message), string `data` values,
  android priority HIGH|NORMAL and ttl "<n>s", and an `apns` background push only with content-available 1,
  apns-priority 5 and no `notification` (else 400 INVALID_ARGUMENT); then the token's next scripted response, else 200 {"name": …}.

Control: POST /control/clock {"now": unix seconds}; POST /control/respond {"token": t, "responses":
[{"status": 404, "error_code": "UNREGISTERED"}, {"status": 503, "retry_after": 5}, …]};
POST /control/revoke (every issued access token becomes invalid);
GET /received → {"messages": […], "grants": [claims…]}.
"""

import json
import re
import sys
import time


import fake_service
import google_oauth

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"

certfile, keyfile, public_key_path, client_email, project_id = sys.argv[1:6]
sock = fake_service.listening_socket()
token_uri = f"https://127.0.0.1:{sock.getsockname()[1]}/token"
state = {"now": int(time.time()), "messages": [], "grants": [], "issued": {}}
script = fake_service.Script()
oauth = google_oauth.TokenEndpoint(public_key_path, client_email, SCOPE, token_uri, state)


def check_message(document):
    message = document.get("message") if isinstance(document, dict) else None
    if not isinstance(message, dict) or not isinstance(message.get("token"), str):
        return "message.token is required"
    if "notification" in message:
        notification = message["notification"]
        if not isinstance(notification.get("title"), str) or not isinstance(notification.get("body"), str):
            return "message.notification needs title and body"
    elif not message.get("data"):
        return "a message needs a notification or data"
    apns = message.get("apns", {})
    if apns.get("headers", {}).get("apns-push-type") == "background":
        aps = apns.get("payload", {}).get("aps", {})
        if aps.get("content-available") != 1 or apns["headers"].get("apns-priority") != "5" or "notification" in message:
            return "apns background push needs content-available 1, priority 5 and no notification"
    if not all(isinstance(v, str) for v in message.get("data", {}).values()):
        return "message.data values must be strings"
    android = message.get("android", {})
    if android.get("priority") not in ("HIGH", "NORMAL") or not re.fullmatch(r"[0-9]+s", android.get("ttl", "")):
        return "android.priority or android.ttl invalid"
    return None


def error(status, code, text, error_code=None):
    document = {"error": {"code": status, "message": text, "status": code}}
    if error_code:
        document["error"]["details"] = [
            {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code}
        ]
    return document


async def handle(scope, path, method, body, send):
    if path == "/control/revoke" and method == "POST":
        state["issued"].clear()
        return await fake_service.respond(send, 200, {})
    if path == "/received" and method == "GET":
        return await fake_service.respond(send, 200, {"messages": state["messages"], "grants": state["grants"]})
    headers = fake_service.headers_of(scope)
    if path == "/token" and method == "POST":
        return await oauth.grant(headers, body, send)
    if path == f"/v1/projects/{project_id}/messages:send" and method == "POST":
        bearer = oauth.bearer(headers)
        record = {"authorization": bearer, "http_version": scope["http_version"]}
        state["messages"].append(record)
        if not oauth.accepts(bearer):
            record["status"] = 401
            return await fake_service.respond(
                send, 401, error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."))
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        record["message"] = document.get("message") if isinstance(document, dict) else None
        why = check_message(document)
        if why:
            record["status"] = 400
            return await fake_service.respond(send, 400, error(400, "INVALID_ARGUMENT", why))
        scripted = script.next(record["message"]["token"])
        if scripted:
            record["status"] = scripted["status"]
            status_names = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
            extra = [("retry-after", scripted["retry_after"])] if "retry_after" in scripted else []
            document = error(scripted["status"], status_names.get(scripted["status"], "INTERNAL"), "scripted",
                             scripted.get("error_code"))
            return await fake_service.respond(send, scripted["status"], document, extra)
        record["status"] = 200
        name = f"projects/{project_id}/messages/{len(state['messages'])}"
        return await fake_service.respond(send, 200, {"name": name})
    return await fake_service.respond(send, 404, error(404, "NOT_FOUND", "no such path"))


app = fake_service.provider_app(handle, state, script)


if __name__ == "__main__":
    fake_service.run(app, sock, certfile, keyfile, ["h2", "http/1.1"])
