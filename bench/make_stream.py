# Builds a long stream from a recorded one (bench/stream.sh): the first event, the middle
# events repeated until the file is about TARGET bytes, then the closing events, so the
# result is still one well-formed reply.
import sys

src, dst, target, head, tail = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
text = open(src, 'rb').read().replace(b'\r\n', b'\n')
events = [e + b'\n\n' for e in text.split(b'\n\n') if e.strip()]
first, middle, last = events[:head], events[head:len(events) - tail], events[len(events) - tail:]
body = b''.join(middle)
out = bytearray(b''.join(first))
while len(out) + len(body) < target:
    out += body
out += b''.join(last)
open(dst, 'wb').write(out)
