"""Produces Protobuf records through Ferry with confluent-kafka-python's ProtobufSerializer and
consumes them back with its ProtobufDeserializer.

Usage: protobuf_roundtrip.py BOOTSTRAP REGISTRY_URL TOPIC MODE RECORDS_JSON

There is no protoc here, so the message class is built at run time from a FileDescriptorProto:
in "auto" mode the Order message defined below (auto.register.schemas on: the serializer registers
it under TOPIC-value); in "latest" mode (auto.register.schemas off, use.latest.version on) and
"consume" mode (nothing produced: as many records as RECORDS_JSON lists are consumed, e.g. rows
another Fluss writer wrote) the first message of the subject's latest version, fetched from the
registry in its serialized form as the serializer itself fetches it. RECORDS_JSON is a list of
messages in the Protobuf JSON mapping (json_format).

Prints one JSON object: "schema_id" of the message sent, "produced" (the partition and offset of
each record, or its error) and "consumed" (each record read back: the framed schema id, the
message-index bytes, whether the decoded message equals the one sent, and the decoded message in
the JSON mapping with fields named as in the schema).
"""
import json
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, json_format, timestamp_pb2, wrappers_pb2

from protobuf_serde import latest_file, message_class, round_trip

F = descriptor_pb2.FieldDescriptorProto


def order_file():
    """The Order message a producer with its own schema sends."""
    fdp = descriptor_pb2.FileDescriptorProto(name="ferry/e2e/order.proto", package="ferry.e2e", syntax="proto3",
                                             dependency=["google/protobuf/timestamp.proto",
                                                         "google/protobuf/wrappers.proto"])
    status = fdp.enum_type.add(name="Status")
    for i, n in enumerate(["UNKNOWN", "NEW", "PAID"]):
        status.value.add(name=n, number=i)
    order = fdp.message_type.add(name="Order")
    addr = order.nested_type.add(name="Address")
    addr.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    addr.field.add(name="zip", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    entry = order.nested_type.add(name="AttrsEntry", options=descriptor_pb2.MessageOptions(map_entry=True))
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)

    def optional(name, number, typ):
        # proto3 `optional`: a synthetic oneof holds the field's presence.
        order.oneof_decl.add(name="_" + name)
        order.field.add(name=name, number=number, type=typ, label=F.LABEL_OPTIONAL,
                        oneof_index=len(order.oneof_decl) - 1, proto3_optional=True)

    order.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    optional("name", 2, F.TYPE_STRING)
    order.field.add(name="qty", number=3, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Int32Value", label=F.LABEL_OPTIONAL)
    optional("price", 4, F.TYPE_DOUBLE)
    order.field.add(name="at", number=5, type=F.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp", label=F.LABEL_OPTIONAL)
    optional("blob", 6, F.TYPE_BYTES)
    order.field.add(name="tags", number=7, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    order.field.add(name="status", number=8, type=F.TYPE_ENUM, type_name=".ferry.e2e.Status", label=F.LABEL_OPTIONAL)
    order.field.add(name="attrs", number=9, type=F.TYPE_MESSAGE, type_name=".ferry.e2e.Order.AttrsEntry", label=F.LABEL_REPEATED)
    order.field.add(name="addr", number=10, type=F.TYPE_MESSAGE, type_name=".ferry.e2e.Order.Address", label=F.LABEL_OPTIONAL)
    order.field.add(name="flag", number=11, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
    # protoc writes every field's JSON name into the descriptors it generates; so do we.
    for m in [order] + list(order.nested_type):
        for f in m.field:
            f.json_name = f.name
    return fdp


DEPS = [timestamp_pb2, wrappers_pb2]


def main():
    bootstrap, url, topic, mode, records = sys.argv[1:6]
    records = json.loads(records)
    registry = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    if mode == "auto":
        cls = message_class(order_file(), DEPS)
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": True})
    else:
        cls = message_class(latest_file(url, topic + "-value"), DEPS)
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": False, "use.latest.version": True})
    sent = [json_format.ParseDict(r, cls()) for r in records]

    print(json.dumps(round_trip(bootstrap, topic, "protobuf-" + topic + "-" + mode, cls, ser, ctx, sent, mode != "consume")))


if __name__ == "__main__":
    main()
