"""A real SMTP server for the mail tests (aiosmtpd; TestSupport's PythonService starts it).

Loopback, STARTTLS with the test CA's server certificate, required before MAIL (and before AUTH);
AUTH PLAIN/LOGIN with the user and password given; every accepted message is written to SPOOL_DIR
as <n>.json {"mail_from", "rcpt_tos", "data" (the message text), "tls" (bool), "auth" (user name)}.
Scripted refusals: the first FAIL_FIRST recipients get `451 4.3.0` (transient); any recipient at
@reject.test gets `550 5.1.1` (permanent).

Usage: smtp_receiver.py CERT.pem KEY.pem SPOOL_DIR USER PASSWORD [PORT [FAIL_FIRST [MODE]]]  → prints `READY <port>`
(PORT 0 or absent: an ephemeral port; a given port lets a test start the server where one was down.)
MODE: `starttls` (default), `smtps` (implicit TLS from the first byte, RFC 8314), or `plain` (no TLS
offered at all, AUTH allowed in clear: a server a client must refuse to send to).
"""

import asyncio
import json
import os
import socket
import ssl
import sys

from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from fake_service import parent_gone

CERT, KEY, SPOOL, USER, PASSWORD = sys.argv[1:6]
PORT = int(sys.argv[6]) if len(sys.argv) > 6 else 0
state = {"fail_left": int(sys.argv[7]) if len(sys.argv) > 7 else 0, "count": 0}
MODE = sys.argv[8] if len(sys.argv) > 8 else "starttls"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == USER and auth_data.password.decode() == PASSWORD
    return AuthResult(success=ok, handled=False)


class Handler:
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if state["fail_left"] > 0:
            state["fail_left"] -= 1
            return "451 4.3.0 Try again later"
        if address.endswith("@reject.test"):
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        state["count"] += 1
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "data": envelope.content.decode("utf-8", "replace"),
            # Implicit TLS: the listening socket speaks only TLS (aiosmtpd sets session.ssl for STARTTLS only).
            "tls": MODE == "smtps" or session.ssl is not None,
            "auth": session.authenticated and USER,
        }
        path = os.path.join(SPOOL, f"{state['count']:04d}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)
        return "250 Message accepted for delivery"


async def main():
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(CERT, KEY)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", PORT))
    sock.listen(64)
    loop = asyncio.get_running_loop()
    if MODE == "smtps":
        factory = lambda: SMTP(Handler(), hostname="localhost", authenticator=authenticator, auth_required=True,
                               auth_require_tls=False)
        server = await loop.create_server(factory, sock=sock, ssl=context)
    elif MODE == "plain":
        factory = lambda: SMTP(Handler(), hostname="localhost", authenticator=authenticator, auth_required=True,
                               auth_require_tls=False)
        server = await loop.create_server(factory, sock=sock)
    else:
        factory = lambda: SMTP(Handler(), hostname="localhost", tls_context=context, require_starttls=True,
                               authenticator=authenticator, auth_required=True, auth_require_tls=True)
        server = await loop.create_server(factory, sock=sock)
    print(f"READY {sock.getsockname()[1]}", flush=True)
    async with server:
        await parent_gone()


asyncio.run(main())
