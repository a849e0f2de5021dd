"""Produces Protobuf records with DECIMAL, DATE, TIME, TINYINT and SMALLINT values through Ferry with
confluent-kafka-python's ProtobufSerializer, and consumes them back with its ProtobufDeserializer.

Usage: protobuf_types_roundtrip.py BOOTSTRAP REGISTRY_URL TOPIC MODE RECORDS_JSON [BAD_RECORD_JSON]

The message class is built at run time from a FileDescriptorProto (there is no protoc here) that
imports confluent/type/decimal.proto (confluent-kafka-python's decimal_pb2), google/type/date.proto
and google/type/timeofday.proto (googleapis-common-protos). Modes:
  auto     the Reading message below, auto.register.schemas on, the serializer's defaults
           (skip.known.types: the imported files are not sent as references);
  refs     the same with skip.known.types off: the serializer registers each imported file under
           its path as subject and references it;
  latest   auto.register.schemas off, use.latest.version on: the class is built from the subject's
           latest version (derived by Ferry from the table when nobody registered one);
  consume  as latest, nothing produced: as many records as RECORDS_JSON lists are consumed;
  wrong    the Reading message with price as a google.type.Date: only the registration is tried,
           and its error printed.
RECORDS_JSON is a list of messages in the Protobuf JSON mapping (json_format). BAD_RECORD_JSON, when
given, is one more message produced after the others, alone, whose delivery error is reported.

Prints one JSON object: "schema_id" of the messages sent, "produced" (each record's partition and
offset, or its error), "bad" (the bad record's delivery error), "register_error" (wrong mode) and
"consumed" (each record read back: framed schema id, message-index bytes, whether it equals the
message sent, and the decoded message in the JSON mapping with fields named as in the schema).
"""
import json
import sys

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.confluent.type import decimal_pb2
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, json_format, timestamp_pb2
from google.type import date_pb2, timeofday_pb2

from protobuf_serde import latest_file, message_class, round_trip

F = descriptor_pb2.FieldDescriptorProto
IMPORTS = [decimal_pb2, date_pb2, timeofday_pb2]


def reading_file(price_type=".confluent.type.Decimal"):
    """The Reading message a producer with its own schema sends."""
    fdp = descriptor_pb2.FileDescriptorProto(name="ferry/e2e/reading.proto", package="ferry.e2e", syntax="proto3",
                                             dependency=[m.DESCRIPTOR.name for m in IMPORTS])
    m = fdp.message_type.add(name="Reading")
    m.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    m.field.add(name="price", number=2, type=F.TYPE_MESSAGE, type_name=price_type, label=F.LABEL_OPTIONAL)
    m.field.add(name="day", number=3, type=F.TYPE_MESSAGE, type_name=".google.type.Date", label=F.LABEL_OPTIONAL)
    m.field.add(name="at", number=4, type=F.TYPE_MESSAGE, type_name=".google.type.TimeOfDay", label=F.LABEL_OPTIONAL)
    m.field.add(name="tiny", number=5, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    m.field.add(name="small", number=6, type=F.TYPE_SINT32, label=F.LABEL_OPTIONAL)
    for f in m.field:
        f.json_name = f.name  # as protoc writes it
    return fdp


DEPS = [timestamp_pb2] + IMPORTS


def main():
    bootstrap, url, topic, mode, records = sys.argv[1:6]
    records = json.loads(records)
    bad = json.loads(sys.argv[6]) if len(sys.argv) > 6 else None
    registry = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    if mode == "wrong":
        cls = message_class(reading_file(".google.type.Date"), DEPS)
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": True})
        try:
            ser(cls(id=1), ctx)
            print(json.dumps({"register_error": None}))
        except Exception as e:  # the registry's refusal, as the serializer raises it
            print(json.dumps({"register_error": str(e)}))
        return
    if mode in ("auto", "refs"):
        cls = message_class(reading_file(), DEPS)
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": True, "skip.known.types": mode == "auto"})
    else:
        cls = message_class(latest_file(url, topic + "-value"), DEPS)
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": False, "use.latest.version": True})
    sent = [json_format.ParseDict(r, cls()) for r in records]
    bad = json_format.ParseDict(bad, cls()) if bad is not None else None
    print(json.dumps(round_trip(bootstrap, topic, "protobuf-types-" + topic + "-" + mode, cls, ser, ctx, sent,
                                mode != "consume", bad)))


if __name__ == "__main__":
    main()
