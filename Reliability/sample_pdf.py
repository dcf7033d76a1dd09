"""A valid one-page PDF of a chosen size, for the attachment scripts (attachment_crash.py, two_instances.py, Benchmarks/attachments.sh),
and the render bomb of issue 37 (redteam.py)."""
import zlib


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


def render_bomb(fills, side=7990):
    """Issue 37 #2: one page of side x side pt (7,990² is under the 64-Mpixel cap at 72 dpi) whose Flate
    content stream fills the whole page `fills` times (1,000 fills: ~550 bytes; TestSupport's
    SampleMedia.pdfRenderBomb is the same PDF)."""
    content = zlib.compress(b"0 0 1 rg\n" + f"0 0 {side} {side} re f\n".encode() * fills, 9)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {side} {side}] /Contents 4 0 R /Resources << >> >>".encode(),
               f"<< /Length {len(content)} /Filter /FlateDecode >>\nstream\n".encode() + content + b"\nendstream"]
    out = b"%PDF-1.4\n"
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += f"{i+1} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects)+1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects)+1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out
