"""push_receiver.py: a stand-in for Grafana Pyroscope's ingest API on 127.0.0.1, for
tests/report/test-push.py and bench/push-cost.sh (no Pyroscope server can be installed here).

It takes POST /ingest as Pyroscope does: the query's name, from, until and format; a body that
is either multipart/form-data (the pprof in the field "profile", and "sample_type_config") or
the raw pprof. Each request it accepts is kept in order: its query, the headers a test asks
about, and the pprof body. mode decides the answer: "ok" (200), or an HTTP status to fail with
("503"); stop() closes the listening socket (connections are refused) and start() opens it again
on the same port. With certfile/keyfile it speaks HTTPS.

Never: accept a request it could not parse (it answers 400 and records the reason), or block
the caller (the server has a thread of its own).
"""
import email.parser
import email.policy
import http.server
import json
import socketserver
import ssl
import threading
import urllib.parse


class Request:
    def __init__(self, query, headers, content_type, body, config, status):
        self.query = query            # dict: name -> the one value
        self.headers = headers        # dict: lower-case name -> value
        self.content_type = content_type
        self.body = body              # the pprof, as sent (gzip)
        self.config = config          # sample_type_config, parsed, or None
        self.status = status          # what the receiver answered


class Receiver:
    def __init__(self, certfile=None, keyfile=None):
        self.lock = threading.Lock()
        self.accepted = []            # Requests answered 2xx, in order
        self.refused = []             # (status, reason) of the others
        self.mode = "ok"
        self.port = 0
        self.certfile, self.keyfile = certfile, keyfile
        self.server = None
        self.start()

    def url(self):
        scheme = "https" if self.certfile else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, status, text=b""):
                self.send_response(status)
                self.send_header("Content-Length", str(len(text)))
                # A connection per request: once stop() has closed the listening socket, the
                # next request is refused, as it would be by a backend that went down.
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                self.wfile.write(text)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(n)
                url = urllib.parse.urlsplit(self.path)
                with receiver.lock:
                    mode = receiver.mode
                if mode != "ok":
                    with receiver.lock:
                        receiver.refused.append((int(mode), "mode"))
                    return self.answer(int(mode))
                why = None
                q = urllib.parse.parse_qs(url.query, keep_blank_values=True, strict_parsing=True)
                query = {k: v[0] for k, v in q.items()}
                if url.path != "/ingest":
                    why = "path " + url.path
                for k in ("name", "from", "until"):
                    if k not in query:
                        why = "no " + k
                ctype = self.headers.get("Content-Type", "")
                body, config = raw, None
                if ctype.startswith("multipart/form-data"):
                    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                        b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + raw)
                    body = None
                    for part in msg.iter_parts():
                        name = part.get_param("name", header="content-disposition")
                        if name == "profile":
                            body = part.get_payload(decode=True)
                        elif name == "sample_type_config":
                            config = json.loads(part.get_payload(decode=True))
                    if body is None:
                        why = "no profile field"
                if not body or body[:2] != b"\x1f\x8b":
                    why = why or "the body is not a gzip'd pprof"
                if why:
                    with receiver.lock:
                        receiver.refused.append((400, why))
                    return self.answer(400, why.encode())
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    receiver.accepted.append(Request(query, headers, ctype, body, config, 200))
                self.answer(200)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        if self.certfile:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(self.certfile, self.keyfile)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def set_mode(self, mode):
        with self.lock:
            self.mode = mode

    def requests(self):
        with self.lock:
            return list(self.accepted)
