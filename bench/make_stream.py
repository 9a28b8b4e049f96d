# Builds a long stream from a recorded one (bench/stream.sh): the first event, the middle
# events repeated until the file is about TARGET bytes, then the closing events, so the
# result is still one well-formed reply.
# A recording of one payload per line (the Vercel AI SDK's .chunks.txt) is framed as the
# service sends it first: "event: TYPE" and "data: PAYLOAD" per event.
import json
import sys

src, dst, target, head, tail = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
text = open(src, 'rb').read().replace(b'\r\n', b'\n')
if src.endswith('.chunks.txt'):
    events = [b'event: ' + json.loads(line)['type'].encode() + b'\ndata: ' + line + b'\n\n'
              for line in text.split(b'\n') if line.strip()]
else:
    events = [e + b'\n\n' for e in text.split(b'\n\n') if e.strip()]
first, middle, last = events[:head], events[head:len(events) - tail], events[len(events) - tail:]
body = b''.join(middle)
out = bytearray(b''.join(first))
while len(out) + len(body) < target:
    out += body
out += b''.join(last)
open(dst, 'wb').write(out)
