"""A valid one-page PDF of a chosen size, for the attachment scripts (attachment_crash.py, two_instances.py, Benchmarks/attachments.sh)."""


def pdf(size, salt):
    """A valid one-page PDF of about `size` bytes, padded with an unreferenced stream."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>"]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += f"{i+1} 0 obj\n{body}\nendobj\n".encode()
    pad = max(0, size - len(out) - 400)
    offsets.append(len(out))
    filler = (salt.encode() * (pad // len(salt) + 1))[:pad]
    out += f"4 0 obj\n<< /Length {pad} >>\nstream\n".encode() + filler + b"\nendstream\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(offsets)+1}\n0000000000 65535 f \n".encode()
    for o in offsets:
        out += f"{o:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(offsets)+1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out
