"""A fake App Store Server API (Get All Subscription Statuses) for the App Store refresh tests. TLS with
ALPN h2 and http/1.1.

Usage: fake_appstore.py CERT.pem KEY.pem PUBLIC_KEY_HEX KEY_ID ISSUER_ID BUNDLE_ID
  PUBLIC_KEY_HEX: the In-App Purchase key's public half, the uncompressed P-256 point (65 bytes) in hex.
Prints `READY <port>`; exits with its parent.

Every /inApps request must carry `Authorization: Bearer <JWT>` as Apple checks it ("Generating JSON Web
Tokens for API requests"): header alg ES256, kid = KEY_ID, typ JWT; an ES256 signature (raw r || s) that
verifies under the public key; claims iss = ISSUER_ID, aud = "appstoreconnect-v1", bid = BUNDLE_ID,
iat not after the fake's clock, exp after it and at most 60 minutes after iat. Anything else is 401 with
no body, as Apple answers.
GET /inApps/v1/subscriptions/ID: a scripted answer first (POST /control/respond {"token": ID,
  "responses": [{"status": 503}]}), else the StatusResponse for the status the test set, else 404
  {"errorCode": 4040010}.

POST /inApps/v1/notifications/history[?paginationToken=T] {"startDate", "endDate"} (Unix ms): Get Notification
  History. A scripted answer first (token "history"; {"status": 0} answers as unscripted), else 400 {"errorCode": 4000xxx} when a date is
  missing, startDate > endDate, or startDate is more than 180 days before the fake's clock, or T is not
  one this fake issued; else the held notifications sent in [startDate, endDate), oldest first, `page_size`
  a page: {"notificationHistory": [{"signedPayload", "sendAttemptResults"}], "hasMore", "paginationToken"}.

Control: POST /control/clock {"now": unix seconds};
POST /control/history {"signedPayload", "sent": Unix ms}: a notification Apple holds (never delivered);
POST /control/history-page-size {"size"};
POST /control/status {"original", "status", "signedTransactionInfo", "signedRenewalInfo" (optional)}: the
  subscription's lastTransactions item (the test signs the data, as Apple would, with its minted chain);
GET /received → {"reads": [ID…], "refused": [reason…], "history": [{"startDate", "endDate", "paginationToken"}…]}.
"""

import base64
import json
import sys
import time
from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

import fake_service

certfile, keyfile, public_hex, key_id, issuer_id, bundle_id = sys.argv[1:7]
public_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes.fromhex(public_hex))
sock = fake_service.listening_socket()
state = {"now": int(time.time()), "statuses": {}, "reads": [], "refused": [], "history": [], "held": [], "page_size": 20}
script = fake_service.Script()
PREFIX = "/inApps/v1/subscriptions/"
HISTORY = "/inApps/v1/notifications/history"
RETENTION_MS = 180 * 86_400_000


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def refusal(headers):
    """Why the bearer token is refused, or None when Apple would accept it."""
    value = headers.get("authorization", "")
    if not value.startswith("Bearer "):
        return "no bearer token"
    parts = value[len("Bearer "):].split(".")
    if len(parts) != 3:
        return "not a compact JWS"
    try:
        header, claims, signature = json.loads(b64url(parts[0])), json.loads(b64url(parts[1])), b64url(parts[2])
    except ValueError:
        return "undecodable"
    if header.get("alg") != "ES256" or header.get("typ") != "JWT" or header.get("kid") != key_id:
        return "header"
    if len(signature) != 64:
        return "signature length"
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public_key.verify(der, (parts[0] + "." + parts[1]).encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return "signature"
    if claims.get("iss") != issuer_id or claims.get("aud") != "appstoreconnect-v1" or claims.get("bid") != bundle_id:
        return "claims"
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or not isinstance(exp, int):
        return "iat/exp"
    if iat > state["now"] or exp <= state["now"] or exp - iat > 3600:
        return "expired or too long"
    return None


async def handle(scope, path, method, body, send):
    if path == "/control/status" and method == "POST":
        document = json.loads(body)
        state["statuses"][document["original"]] = document
        return await fake_service.respond(send, 200, {})
    if path == "/control/history" and method == "POST":
        document = json.loads(body)
        state["held"].append({"signedPayload": document["signedPayload"], "sent": int(document["sent"])})
        return await fake_service.respond(send, 200, {})
    if path == "/control/history-page-size" and method == "POST":
        state["page_size"] = int(json.loads(body)["size"])
        return await fake_service.respond(send, 200, {})
    if path == "/received" and method == "GET":
        return await fake_service.respond(
            send, 200, {"reads": state["reads"], "refused": state["refused"], "history": state["history"]})
    if path == HISTORY and method == "POST":
        why = refusal(fake_service.headers_of(scope))
        if why is not None:
            state["refused"].append(why)
            return await fake_service.respond(send, 401)
        query = parse_qs(scope.get("query_string", b"").decode())
        token = query.get("paginationToken", [None])[0]
        try:
            document = json.loads(body)
            start, end = int(document["startDate"]), int(document["endDate"])
        except (ValueError, KeyError, TypeError):
            return await fake_service.respond(send, 400, {"errorCode": 4000001, "errorMessage": "invalid request"})
        state["history"].append({"startDate": start, "endDate": end, "paginationToken": token})
        scripted = script.next("history")
        if scripted is not None and scripted["status"] != 0:
            return await fake_service.respond(send, scripted["status"], scripted.get("body"))
        if start > end or start < state["now"] * 1000 - RETENTION_MS:
            return await fake_service.respond(send, 400, {"errorCode": 4000028, "errorMessage": "invalid start date"})
        offset = 0
        if token is not None:
            if not token.startswith("page-") or not token[5:].isdigit():
                return await fake_service.respond(send, 400, {"errorCode": 4000020, "errorMessage": "invalid token"})
            offset = int(token[5:])
        matching = sorted((n for n in state["held"] if start <= n["sent"] < end), key=lambda n: n["sent"])
        page = matching[offset:offset + state["page_size"]]
        more = offset + len(page) < len(matching)
        answer = {
            "notificationHistory": [
                {"signedPayload": n["signedPayload"], "sendAttemptResults": [
                    {"attemptDate": n["sent"], "sendAttemptResult": "UNSUCCESSFUL_HTTP_RESPONSE_CODE"}]}
                for n in page
            ],
            "hasMore": more,
        }
        if more:
            answer["paginationToken"] = "page-%d" % (offset + len(page))
        return await fake_service.respond(send, 200, answer)
    if path.startswith(PREFIX) and method == "GET":
        why = refusal(fake_service.headers_of(scope))
        if why is not None:
            state["refused"].append(why)
            return await fake_service.respond(send, 401)
        original = path[len(PREFIX):]
        state["reads"].append(original)
        scripted = script.next(original)
        if scripted is not None:
            return await fake_service.respond(send, scripted["status"], scripted.get("body"))
        status = state["statuses"].get(original)
        if status is None:
            return await fake_service.respond(
                send, 404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."})
        item = {
            "originalTransactionId": original,
            "status": status["status"],
            "signedTransactionInfo": status["signedTransactionInfo"],
        }
        if status.get("signedRenewalInfo"):
            item["signedRenewalInfo"] = status["signedRenewalInfo"]
        return await fake_service.respond(send, 200, {
            "environment": "Sandbox", "bundleId": bundle_id, "appAppleId": 1234,
            "data": [{"subscriptionGroupIdentifier": "21000000", "lastTransactions": [item]}],
        })
    return await fake_service.respond(send, 404, {"errorCode": 4040000, "errorMessage": "no such path"})


app = fake_service.provider_app(handle, state, script)


if __name__ == "__main__":
    fake_service.run(app, sock, certfile, keyfile, ["h2", "http/1.1"])
