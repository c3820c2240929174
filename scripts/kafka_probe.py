#!/usr/bin/env python3
"""Helpers of scripts/kafka that need a socket.

  kafka_probe.py free-ports N            prints N distinct free TCP ports of 127.0.0.1, one a line
  kafka_probe.py bindable PORT           exit 0 when a listener could bind 127.0.0.1:PORT now
  kafka_probe.py listed HOST PORT NODE   exit 0 when the broker at HOST:PORT answers a Metadata request
                                         (v4) and lists node NODE at HOST:PORT among its brokers; 1 when
                                         it refuses, times out (2 s) or does not list it yet

A KRaft broker processes requests only once it has caught up with the metadata log, and lists itself in
Metadata only once the controller has unfenced it, so `listed` passing means clients can use it.
"""
import socket
import struct
import sys

METADATA = 3
METADATA_VERSION = 4  # the last version without flexible (compact) encoding; Kafka 4.1 serves 0-13
TIMEOUT_S = 2.0


def free_ports(count):
    sockets = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
    ports = [s.getsockname()[1] for s in sockets]  # all bound at once, so distinct
    for s in sockets:
        s.close()
    return ports


def bindable(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Java's server sockets do
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def read_exactly(sock, size):
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("connection closed")
        data += chunk
    return data


def metadata_request(correlation_id):
    client_id = b"bloomgate-kafka-probe"
    header = struct.pack(">hhih", METADATA, METADATA_VERSION, correlation_id, len(client_id)) + client_id
    body = struct.pack(">i?", 0, False)  # no topics (an empty array, not null = all), no auto-creation
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def listed_brokers(host, port):
    """(node_id, host, port) of every broker a Metadata v4 response lists."""
    with socket.create_connection((host, port), timeout=TIMEOUT_S) as sock:
        sock.settimeout(TIMEOUT_S)
        sock.sendall(metadata_request(correlation_id=1))
        size, = struct.unpack(">i", read_exactly(sock, 4))
        response = read_exactly(sock, size)
    offset = 4 + 4  # correlation id, throttle_time_ms
    count, = struct.unpack_from(">i", response, offset)
    offset += 4
    brokers = []
    for _ in range(count):
        node_id, host_len = struct.unpack_from(">ih", response, offset)
        offset += 6
        broker_host = response[offset:offset + host_len].decode()
        offset += host_len
        broker_port, rack_len = struct.unpack_from(">ih", response, offset)
        offset += 6 + max(rack_len, 0)
        brokers.append((node_id, broker_host, broker_port))
    return brokers


def main(argv):
    if len(argv) == 3 and argv[1] == "free-ports":
        print("\n".join(str(p) for p in free_ports(int(argv[2]))))
        return 0
    if len(argv) == 3 and argv[1] == "bindable":
        return 0 if bindable(int(argv[2])) else 1
    if len(argv) == 5 and argv[1] == "listed":
        host, port, node = argv[2], int(argv[3]), int(argv[4])
        try:
            brokers = listed_brokers(host, port)
        except (OSError, ConnectionError, struct.error):
            return 1
        return 0 if (node, host, port) in brokers else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
