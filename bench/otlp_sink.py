"""bench/otlp_sink.py: an OTLP/HTTP collector for the tracing benchmarks (bench/trace.sh,
bench/trace_span.sh) that answers every export 200 at once and keeps nothing; its own CPU is
not the benchmarks'. Prints "http://127.0.0.1:PORT" once it listens."""
import http.server


class Sink(http.server.BaseHTTPRequestHandler):
    # Connections stay open between exports, as a collector keeps them (the OpenTelemetry
    # Collector's OTLP/HTTP receiver is Go's net/http, HTTP/1.1 keep-alive).
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print("http://127.0.0.1:%d" % server.server_port, flush=True)
server.serve_forever()
