#!/usr/bin/python3
"""Writes one order as Schema Registry framed records with the Python libraries producers use:
python3-avro for Avro, and python3-protobuf with a module compiled by protoc from the .proto text.

Usage: schema_producers.py OUT_DIR
Writes OUT_DIR/order.avsc, order.proto, order.avro (framed, schema id 1) and order.protobuf (framed,
schema id 2, message indexes [0]); tests/app/schema_registry_test.cc keys them.
"""
import io
import pathlib
import struct
import subprocess
import sys

import avro.io
import avro.schema

AVRO_SCHEMA = """{"type": "record", "name": "Order", "fields": [
  {"name": "id", "type": "string"}, {"name": "count", "type": "int"}, {"name": "total", "type": "long"},
  {"name": "price", "type": "double"}, {"name": "paid", "type": "boolean"},
  {"name": "coupon", "type": ["null", "string"], "default": null},
  {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [{"name": "id", "type": "long"}]}}]}"""

PROTO_SCHEMA = """syntax = "proto3";
package shop;
message Order {
  message Customer { int64 id = 1; }
  string id = 1; int32 count = 2; int64 total = 3; double price = 4; bool paid = 5; Customer customer = 6;
}
"""

ORDER = {"id": "o-1", "count": -7, "total": 18000000000, "price": 42.0, "paid": True, "coupon": None,
         "customer": {"id": 99}}


def frame(schema_id, payload):
    return b"\x00" + struct.pack(">I", schema_id) + payload


def main(out):
    out.mkdir(parents=True, exist_ok=True)
    (out / "order.avsc").write_text(AVRO_SCHEMA)
    buffer = io.BytesIO()
    avro.io.DatumWriter(avro.schema.parse(AVRO_SCHEMA)).write(ORDER, avro.io.BinaryEncoder(buffer))
    (out / "order.avro").write_bytes(frame(1, buffer.getvalue()))

    (out / "order.proto").write_text(PROTO_SCHEMA)
    subprocess.run(["protoc", f"--proto_path={out}", f"--python_out={out}", str(out / "order.proto")], check=True)
    sys.path.insert(0, str(out))
    import order_pb2  # compiled just above

    message = order_pb2.Order(id="o-1", count=-7, total=18000000000, price=42.0, paid=True)
    message.customer.id = 99
    (out / "order.protobuf").write_bytes(frame(2, b"\x00" + message.SerializeToString()))


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
