#!/usr/bin/python3
"""A Schema Registry stand-in over TLS, on 127.0.0.1, for the registry client's TLS test.

No Schema Registry server is packaged for Debian, so this serves the registry's documented answer to
GET /schemas/ids/{id} ({"schema": "...", "schemaType": "AVRO"}) for the one schema it is given, over
Python's ssl module with the certificate and key it is given. With --client-ca it also requires a client
certificate signed by that CA. It writes its port to --port-file once it listens, and exits by itself after
--lifetime seconds so a test that dies cannot leave it behind.

    tls_schema_registry.py --cert C --key K --schema-file S --port-file P [--client-ca CA] [--lifetime 60]
"""

import argparse
import http.server
import json
import os
import ssl
import threading


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--schema-file", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--client-ca")
    parser.add_argument("--lifetime", type=float, default=60)
    args = parser.parse_args()
    with open(args.schema_file, encoding="utf-8") as f:
        body = json.dumps({"schema": f.read(), "schemaType": "AVRO"}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            found = self.path == "/schemas/ids/1"
            payload = body if found else b'{"error_code": 40403, "message": "Schema not found"}'
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *unused):
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(args.client_ca)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Timer(args.lifetime, server.shutdown).start()
    with open(args.port_file + ".tmp", "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))

    os.replace(args.port_file + ".tmp", args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
