"""Small valid PDFs made by hand (no PDF writer is needed)."""

from __future__ import annotations

__all__ = ["build_pdf"]


def build_pdf(pages: list[str], info: dict[str, str] | None = None) -> bytes:
    """A valid PDF (Helvetica text, one line per ``\\n``) with an optional Info dictionary."""

    def literal(text: str) -> str:
        return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"

    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"",  # the page tree, filled in below
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for text in pages:
        ops = "BT /F1 11 Tf 13 TL 50 750 Td "
        ops += " ".join(f"{literal(line)} Tj T*" for line in text.split("\n")) + " ET"
        stream = ops.encode("latin-1")
        page_id, contents_id = len(objects) + 1, len(objects) + 2
        kids.append(f"{page_id} 0 R")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % contents_id
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(pages)} >>".encode()
    trailer_info = ""
    if info:
        entries = " ".join(f"/{key} {literal(value)}" for key, value in info.items())
        objects.append(f"<< {entries} >>".encode("latin-1"))
        trailer_info = f" /Info {len(objects)} 0 R"

    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += (f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{trailer_info} >>\nstartxref\n{xref}\n%%EOF\n").encode()
    return bytes(out)
