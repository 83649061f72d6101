#!/usr/bin/python3
"""make_hostile.py OUT_DIR REAL.jpg BOMB.jpg MANY_SCANS - writes the hostile objects of the class tests into
OUT_DIR and a manifest, OUT_DIR/expected.tsv: file name, then the errno the class must return
for probe and for prep (0: must succeed).

Run with Debian's /usr/bin/python3 (Pillow, for the CMYK file); MANY_SCANS is the many_scans
program built with the tests.
"""
import io
import os
import random
import subprocess
import sys

from PIL import Image

out, real, bomb = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
rows = []
with open(real, "rb") as f:
    data = f.read()


def put(name, blob, probe_errno, prep_errno):
    with open(os.path.join(out, name), "wb") as f:
        f.write(blob)
    rows.append((name, probe_errno, prep_errno))


def find_marker(blob, code):
    i = 2
    while i + 4 <= len(blob):
        if blob[i] != 0xFF:
            raise ValueError("lost marker sync")
        m, seglen = blob[i + 1], int.from_bytes(blob[i + 2:i + 4], "big")
        if m == code:
            return i
        i += 2 + seglen
    raise ValueError("marker %02x not found" % code)


rng = random.Random(1234)
put("random.bin", bytes(rng.getrandbits(8) for _ in range(65536)), "EBADMSG", "EBADMSG")
put("empty.jpg", b"", "EBADMSG", "EBADMSG")
# Only the SOI marker.
put("soi-only.jpg", b"\xff\xd8", "EBADMSG", "EBADMSG")
# Cut in the middle of the entropy-coded data: the header is fine, the pixels are not.
put("truncated.jpg", data[: len(data) // 2], "0", "EBADMSG")
# Cut inside the header.
put("truncated-header.jpg", data[:100], "EBADMSG", "EBADMSG")
# A Huffman table whose code counts claim more codes than exist.
dht = find_marker(data, 0xC4)
bad = bytearray(data)
for k in range(16):
    bad[dht + 5 + k] = 0xFF
put("corrupt-dht.jpg", bytes(bad), "EBADMSG", "EBADMSG")
# A frame header claiming 12-bit samples: Pillow refuses those too.
sof = find_marker(data, 0xC0) if b"\xff\xc0" in data else find_marker(data, 0xC2)
bad = bytearray(data)
bad[sof + 4] = 12
put("bits12.jpg", bytes(bad), "EMEDIUMTYPE", "EMEDIUMTYPE")
# The 64250 x 64250 header bomb (1.4 KB), from gdk-pixbuf-tests.
with open(bomb, "rb") as f:
    put("bomb-64250.jpg", f.read(), "0", "E2BIG")
# A CMYK JPEG, as Photoshop writes them (Adobe marker, inverted): decodes.
img = Image.open(io.BytesIO(data)).convert("RGB").resize((320, 240)).convert("CMYK")
buf = io.BytesIO()
img.save(buf, "JPEG", quality=90)
put("cmyk.jpg", buf.getvalue(), "0", "0")
# A valid progressive JPEG with 1,324 scans, written by many_scans (its path is argv[4]): far
# over the scan limit (a CPU bomb).
r = subprocess.run([sys.argv[4]], capture_output=True)
if r.returncode != 0:
    sys.exit("many_scans failed: %s" % r.stderr.decode(errors="replace"))
put("many-scans.jpg", r.stdout, "0", "E2BIG")
with open(os.path.join(out, "expected.tsv"), "w") as f:
    for name, probe_errno, prep_errno in rows:
        f.write("%s\t%s\t%s\n" % (name, probe_errno, prep_errno))
print("%d hostile objects in %s" % (len(rows), out))
