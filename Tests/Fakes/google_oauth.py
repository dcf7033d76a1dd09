"""Google's OAuth 2.0 token endpoint for a service account, as the FCM and Play fakes serve it.

POST /token (RFC 7523 JWT-bearer grant, form-encoded): grant_type must be
urn:ietf:params:oauth:grant-type:jwt-bearer; the assertion's RS256 signature must verify under the
service account's public key, iss = the client email, scope = the fake's scope, aud = the token URI,
exp = iat + 3600 at most, iat not in the future nor past exp by the fake's clock (else 400
invalid_grant). Answers a fresh access token with expires_in 3599, valid until the fake's clock
passes it or the test revokes every token.
"""

import base64
import json
import secrets
from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

import fake_service

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ACCESS_TOKEN_SECONDS = 3599


def b64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenEndpoint:
    """One service account's grants. `state` is the fake's: its "now" (the fake's clock, Unix seconds),
    "grants" (the accepted assertions' claims) and "issued" (access token → expiry) are used."""

    def __init__(self, public_key_path, client_email, scope, token_uri, state):
        with open(public_key_path, "rb") as handle:
            self.public_key = serialization.load_pem_public_key(handle.read())
        self.client_email, self.scope, self.token_uri, self.state = client_email, scope, token_uri, state

    def check_assertion(self, assertion):
        """(claims, None) when the assertion is acceptable, else (None, why)."""
        try:
            header_b64, claims_b64, signature_b64 = assertion.split(".")
            header, claims = json.loads(b64(header_b64)), json.loads(b64(claims_b64))
            self.public_key.verify(
                b64(signature_b64), f"{header_b64}.{claims_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except (ValueError, InvalidSignature, json.JSONDecodeError):
            return None, "Invalid JWT Signature."
        if header.get("alg") != "RS256":
            return None, "alg must be RS256"
        if claims.get("iss") != self.client_email or claims.get("scope") != self.scope or claims.get("aud") != self.token_uri:
            return None, "Invalid iss, scope or aud"
        iat, exp, now = claims.get("iat"), claims.get("exp"), self.state["now"]
        if not isinstance(iat, int) or not isinstance(exp, int) or not iat < exp <= iat + 3600:
            return None, "Invalid JWT: exp must be within an hour of iat"
        if iat > now + 60 or exp < now:
            return None, "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe"
        return claims, None

    async def grant(self, headers, body, send):
        """Answers one POST /token."""
        if headers.get("content-type") != "application/x-www-form-urlencoded":
            return await fake_service.respond(send, 400, {"error": "invalid_request"})
        form = {k: v[-1] for k, v in parse_qs(body.decode()).items()}
        if form.get("grant_type") != GRANT_TYPE:
            return await fake_service.respond(send, 400, {"error": "unsupported_grant_type"})
        claims, why = self.check_assertion(form.get("assertion", ""))
        if claims is None:
            return await fake_service.respond(send, 400, {"error": "invalid_grant", "error_description": why})
        access_token = "ya29.fake-" + secrets.token_urlsafe(24)
        self.state["issued"][access_token] = self.state["now"] + ACCESS_TOKEN_SECONDS
        self.state["grants"].append(claims)
        return await fake_service.respond(
            send, 200, {"access_token": access_token, "expires_in": ACCESS_TOKEN_SECONDS, "token_type": "Bearer"})

    @staticmethod
    def bearer(headers):
        """The request's bearer token ("" without one)."""
        authorization = headers.get("authorization", "")
        return authorization[len("Bearer "):] if authorization.startswith("Bearer ") else ""

    def accepts(self, bearer):
        """Whether `bearer` is an access token this endpoint issued and the fake's clock has not passed."""
        expiry = self.state["issued"].get(bearer)
        return expiry is not None and expiry > self.state["now"]
