"""A fake Google Play Developer API (subscriptionsv2.get, subscriptions.acknowledge) with its Google
OAuth2 token endpoint, for the Play purchase tests. TLS with ALPN h2 and http/1.1.

Usage: fake_play.py CERT.pem KEY.pem PUBLIC_KEY.pem CLIENT_EMAIL PACKAGE
  PUBLIC_KEY.pem: the service account's RSA public key (SubjectPublicKeyInfo PEM file).
Prints `READY <port>`; exits with its parent. The token URI is https://127.0.0.1:<port>/token.

POST /token (RFC 7523 JWT-bearer grant, form-encoded): as Google's — the assertion's RS256 signature
  must verify under PUBLIC_KEY, iss = CLIENT_EMAIL, scope = the androidpublisher scope, aud = the
  token URI, exp within an hour of iat, iat not in the future by the fake's clock (else 400
  invalid_grant). Answers a fresh access token with expires_in 3599.
GET /androidpublisher/v3/applications/PACKAGE/purchases/subscriptionsv2/tokens/TOKEN: the bearer must
  be a token this fake issued and not expired (else 401); a token the test has not set, or one set for
  another package, is 404; else the SubscriptionPurchaseV2 Google would answer.
POST /androidpublisher/v3/applications/PACKAGE/purchases/subscriptions/PRODUCT/tokens/TOKEN:acknowledge:
  401 as above; 404 for an unknown token; 400 when PRODUCT is not the token's or its payment is
  pending; a scripted answer for the token (POST /control/respond) next; else the purchase becomes
  ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED, 200 with an empty body.

Control: POST /control/clock {"now": unix seconds};
POST /control/subscription {"token", "package", "product", "state": ACTIVE|CANCELED|IN_GRACE_PERIOD|
  ON_HOLD|PAUSED|EXPIRED|PENDING|REVOKED, "start_ms", "expiry_ms", "account" (obfuscated id or null),
  "auto_renew", "test", "order", "linked" (the token it replaced, optional)}: sets (or moves) a purchase;
  REVOKED is served as Google serves a
  revoked subscription: SUBSCRIPTION_STATE_EXPIRED, expiry at the revocation, canceled by the developer.
POST /control/revoke-tokens (every issued access token becomes invalid);
GET /received → {"grants": [claims…], "reads": [tokens], "acknowledged": [tokens]}.
"""

import json
import sys
import time
from datetime import datetime, timezone


import fake_service
import google_oauth

SCOPE = "https://www.googleapis.com/auth/androidpublisher"
API = "/androidpublisher/v3/applications/"

certfile, keyfile, public_key_path, client_email, package = sys.argv[1:6]
sock = fake_service.listening_socket()
token_uri = f"https://127.0.0.1:{sock.getsockname()[1]}/token"
state = {"now": int(time.time()), "grants": [], "issued": {}, "subscriptions": {}, "reads": [], "acknowledged": []}
script = fake_service.Script()
oauth = google_oauth.TokenEndpoint(public_key_path, client_email, SCOPE, token_uri, state)


def rfc3339(ms):
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def document(purchase):
    """The SubscriptionPurchaseV2 resource for a purchase the test set."""
    kind = purchase["state"]
    served = "EXPIRED" if kind == "REVOKED" else kind
    item = {"productId": purchase["product"], "expiryTime": rfc3339(purchase["expiry_ms"])}
    if served in ("ACTIVE", "IN_GRACE_PERIOD", "ON_HOLD", "PAUSED", "CANCELED", "PENDING"):
        item["autoRenewingPlan"] = {"autoRenewEnabled": bool(purchase.get("auto_renew", True)) and served != "CANCELED"}
    resource = {
        "kind": "androidpublisher#subscriptionPurchaseV2",
        "regionCode": "DE",
        "lineItems": [item],
        "startTime": rfc3339(purchase["start_ms"]),
        "subscriptionState": "SUBSCRIPTION_STATE_" + served,
        "latestOrderId": purchase.get("order", "GPA.0000-0000-0000-00000"),
        "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" if purchase.get("acknowledged")
        else "ACKNOWLEDGEMENT_STATE_PENDING",
    }
    if kind in ("CANCELED", "REVOKED"):
        resource["canceledStateContext"] = (
            {"developerInitiatedCancellation": {}} if kind == "REVOKED" else {"userInitiatedCancellation": {}})
    if purchase.get("account"):
        resource["externalAccountIdentifiers"] = {"obfuscatedExternalAccountId": purchase["account"]}
    if purchase.get("test"):
        resource["testPurchase"] = {}
    if purchase.get("linked"):
        resource["linkedPurchaseToken"] = purchase["linked"]
    return resource


def error(status, code, text):
    return {"error": {"code": status, "message": text, "status": code}}


async def handle(scope, path, method, body, send):
    if path == "/control/subscription" and method == "POST":
        purchase = json.loads(body)
        previous = state["subscriptions"].get(purchase["token"], {})
        purchase.setdefault("acknowledged", previous.get("acknowledged", False))
        state["subscriptions"][purchase["token"]] = purchase
        return await fake_service.respond(send, 200, {})
    if path == "/control/revoke-tokens" and method == "POST":
        state["issued"].clear()
        return await fake_service.respond(send, 200, {})
    if path == "/received" and method == "GET":
        return await fake_service.respond(
            send, 200, {"grants": state["grants"], "reads": state["reads"], "acknowledged": state["acknowledged"]})
    headers = fake_service.headers_of(scope)
    if path == "/token" and method == "POST":
        return await oauth.grant(headers, body, send)
    if path.startswith(API):
        if not oauth.accepts(oauth.bearer(headers)):
            return await fake_service.respond(
                send, 401, error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."))
        parts = path[len(API):].split("/")
        # PACKAGE/purchases/subscriptionsv2/tokens/TOKEN
        if method == "GET" and len(parts) == 5 and parts[1:4] == ["purchases", "subscriptionsv2", "tokens"]:
            purchase = state["subscriptions"].get(parts[4])
            state["reads"].append(parts[4])
            if purchase is None or purchase["package"] != parts[0] or parts[0] != package:
                return await fake_service.respond(send, 404, error(404, "NOT_FOUND", "The purchase token was not found."))
            return await fake_service.respond(send, 200, document(purchase))
        # PACKAGE/purchases/subscriptions/PRODUCT/tokens/TOKEN:acknowledge
        if method == "POST" and len(parts) == 6 and parts[1:3] == ["purchases", "subscriptions"] and parts[5].endswith(":acknowledge"):
            token = parts[5][: -len(":acknowledge")]
            purchase = state["subscriptions"].get(token)
            if purchase is None or purchase["package"] != parts[0]:
                return await fake_service.respond(send, 404, error(404, "NOT_FOUND", "The purchase token was not found."))
            if purchase["product"] != parts[3] or purchase["state"] == "PENDING":
                return await fake_service.respond(send, 400, error(400, "INVALID_ARGUMENT", "cannot acknowledge"))
            scripted = script.next(token)
            if scripted is not None:
                return await fake_service.respond(send, scripted["status"], error(scripted["status"], "UNAVAILABLE", "scripted"))
            purchase["acknowledged"] = True
            state["acknowledged"].append(token)
            return await fake_service.respond(send, 200, None)
    return await fake_service.respond(send, 404, error(404, "NOT_FOUND", "no such path"))


app = fake_service.provider_app(handle, state, script)


if __name__ == "__main__":
    fake_service.run(app, sock, certfile, keyfile, ["h2", "http/1.1"])
