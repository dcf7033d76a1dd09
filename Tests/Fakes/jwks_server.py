"""A fake OpenID provider key-set endpoint (Sign in with Apple's /auth/keys, Google's /oauth2/v3/certs)
for the OIDC sign-in tests. TLS with ALPN h2 and http/1.1.

Usage: jwks_server.py CERT.pem KEY.pem
Prints `READY <port>`; exits with its parent. The key set is at https://127.0.0.1:<port>/keys.

GET /keys: the current key set (JSON), with `Cache-Control: public, max-age=<max_age>` (no header
  when max_age is null); every request counted. While `fail` is set, 503 instead (still counted).
Control: POST /control/keys {"jwks": {"keys": [...]}, "max_age": n | null, "fail": bool} replaces
  the served document (the tests mint the keys and rotate them through this);
GET /received -> {"fetches": n}.
"""

import json
import sys

import fake_service

certfile, keyfile = sys.argv[1:3]
sock = fake_service.listening_socket()
state = {"jwks": {"keys": []}, "max_age": 3600, "fail": False, "fetches": 0}


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        return await fake_service.lifespan(receive, send)
    path, method = scope["path"], scope["method"]
    body = await fake_service.read_body(receive)
    if path == "/control/keys" and method == "POST":
        document = json.loads(body)
        state["jwks"] = document["jwks"]
        state["max_age"] = document.get("max_age")
        state["fail"] = bool(document.get("fail", False))
        return await fake_service.respond(send, 200, {})
    if path == "/received" and method == "GET":
        return await fake_service.respond(send, 200, {"fetches": state["fetches"]})
    if path == "/keys" and method == "GET":
        state["fetches"] += 1
        if state["fail"]:
            return await fake_service.respond(send, 503, {"error": "unavailable"})
        headers = [] if state["max_age"] is None else [("cache-control", f"public, max-age={state['max_age']}")]
        return await fake_service.respond(send, 200, state["jwks"], headers)
    return await fake_service.respond(send, 404, {"error": "no such path"})


if __name__ == "__main__":
    fake_service.run(app, sock, certfile, keyfile, ["h2", "http/1.1"])
