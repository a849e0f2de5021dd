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
import base64
import datetime
import json
import sys
import urllib.request

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.confluent.type import decimal_pb2
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory, timestamp_pb2
from google.type import date_pb2, timeofday_pb2

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


def latest_file(url, subject):
    """The subject's latest version as the serializer reads it (format=serialized)."""
    with urllib.request.urlopen(url + "/subjects/" + subject + "/versions/latest?format=serialized") as r:
        latest = json.loads(r.read())
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.standard_b64decode(latest["schema"]))
    if not fdp.name:
        fdp.name = "latest.proto"
    return fdp


def message_class(fdp):
    pool = descriptor_pool.DescriptorPool()
    for m in [timestamp_pb2] + IMPORTS:
        pool.AddSerializedFile(m.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    name = fdp.message_type[0].name
    desc = pool.FindMessageTypeByName((fdp.package + "." if fdp.package else "") + name)
    return message_factory.GetMessageClass(desc)


def main():
    bootstrap, url, topic, mode, records = sys.argv[1:6]
    records = json.loads(records)
    bad = json.loads(sys.argv[6]) if len(sys.argv) > 6 else None
    registry = SchemaRegistryClient({"url": url})
    ctx = SerializationContext(topic, MessageField.VALUE)
    if mode == "wrong":
        cls = message_class(reading_file(".google.type.Date"))
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": True})
        try:
            ser(cls(id=1), ctx)
            print(json.dumps({"register_error": None}))
        except Exception as e:  # the registry's refusal, as the serializer raises it
            print(json.dumps({"register_error": str(e)}))
        return
    if mode in ("auto", "refs"):
        cls = message_class(reading_file())
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": True, "skip.known.types": mode == "auto"})
    else:
        cls = message_class(latest_file(url, topic + "-value"))
        ser = ProtobufSerializer(cls, registry, conf={"auto.register.schemas": False, "use.latest.version": True})
    sent = [json_format.ParseDict(r, cls()) for r in records]

    produced = [] if mode == "consume" else [None] * len(records)
    schema_id = None

    def report(into, i):
        def cb(err, msg):
            into[i] = {"error": str(err)} if err else {"partition": msg.partition(), "offset": msg.offset()}
        return cb

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, m in enumerate(sent if mode != "consume" else []):
        v = ser(m, ctx)
        schema_id = int.from_bytes(v[1:5], "big")
        p.produce(topic, value=v, partition=0, on_delivery=report(produced, i))
    p.flush(60)
    bad_result = [None]
    if bad is not None:
        p.produce(topic, value=ser(json_format.ParseDict(bad, cls()), ctx), partition=0, on_delivery=report(bad_result, 0))
        p.flush(60)

    # Without a registry client the deserializer decodes with the class it is given, after
    # reading the framing (magic byte, id, message indexes).
    des = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "protobuf-types-" + topic + "-" + mode,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    consumed = []
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=60)
    while len(consumed) < len(records) and datetime.datetime.now() < deadline:
        msg = c.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            consumed.append({"error": str(msg.error())})
            break
        v = msg.value()
        got = des(v, ctx)
        i = len(consumed)
        consumed.append({"offset": msg.offset(), "magic": v[0], "id": int.from_bytes(v[1:5], "big"),
                         "indexes": list(v[5:6]), "equal": got == sent[i],
                         "value": json_format.MessageToDict(got, preserving_proto_field_name=True)})
    c.close()
    print(json.dumps({"schema_id": schema_id, "produced": produced, "bad": bad_result[0], "consumed": consumed}))


if __name__ == "__main__":
    main()
