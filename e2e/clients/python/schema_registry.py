"""Drives a Schema Registry with confluent-kafka-python's SchemaRegistryClient and Avro serdes.

Usage: schema_registry.py URL SUBJECT SCHEMA_JSON BAD_SCHEMA_JSON RECORD_JSON JSON_TOPIC JSON_SCHEMA JSON_RECORD
       [PROTO_TOPIC PROTO_SCHEMA PROTO_BAD PROTO_RECORD]

Runs, in order, and prints one JSON object with what each step got:
  latest      get_latest_version(SUBJECT) before anyone registered (the registry derives it)
  register    register_schema(SUBJECT, SCHEMA) twice (ids must agree)
  lookup      lookup_schema(SUBJECT, SCHEMA)
  by_id       get_schema(id)
  refused     register_schema(SUBJECT, BAD_SCHEMA): the error's HTTP status, code and message
  serde       AvroSerializer (auto.register.schemas off, use.latest.version on) then
              AvroDeserializer of RECORD: the framed schema id and the decoded record
  json        JSONSerializer of JSON_RECORD to JSON_TOPIC (registering JSON_SCHEMA), then
              JSONDeserializer: the framed id, the id registered, the decoded record
  protobuf    with PROTO_*: register_schema(PROTO_TOPIC-value, Schema(PROTO_SCHEMA, "PROTOBUF")),
              get_latest_version, lookup_schema, get_schema(id), the refusal of PROTO_BAD, then
              ProtobufSerializer (auto-register: it registers the message's descriptor, base64)
              and one with use.latest.version, and ProtobufDeserializer of PROTO_RECORD
              ({"id", "name", "at_ms"}) as message ferry.e2e.Item, built at run time from a
              FileDescriptorProto that must equal PROTO_SCHEMA
"""
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    url, subject, schema, bad, record, json_topic, json_schema, json_record = sys.argv[1:9]
    client = SchemaRegistryClient({"url": url})
    out = {}

    latest = client.get_latest_version(subject)
    out["latest"] = {"id": latest.schema_id, "version": latest.version, "schema": latest.schema.schema_str}

    first = client.register_schema(subject, Schema(schema, "AVRO"))
    # A new client: the first answer must not come from the cache.
    second = SchemaRegistryClient({"url": url}).register_schema(subject, Schema(schema, "AVRO"))
    out["register"] = [first, second]

    found = client.lookup_schema(subject, Schema(schema, "AVRO"))
    out["lookup"] = {"id": found.schema_id, "version": found.version, "subject": found.subject}

    out["by_id"] = SchemaRegistryClient({"url": url}).get_schema(first).schema_str

    try:
        client.register_schema(subject, Schema(bad, "AVRO"))
        out["refused"] = None
    except SchemaRegistryError as e:
        out["refused"] = {"http_status": e.http_status_code, "code": e.error_code, "message": e.error_message}

    topic = subject.removesuffix("-value")
    ctx = SerializationContext(topic, MessageField.VALUE)
    ser = AvroSerializer(SchemaRegistryClient({"url": url}), conf={"auto.register.schemas": False, "use.latest.version": True})
    framed = ser(json.loads(record), ctx)
    des = AvroDeserializer(SchemaRegistryClient({"url": url}))
    decoded = des(framed, ctx)
    out["serde"] = {"magic": framed[0], "id": int.from_bytes(framed[1:5], "big"), "decoded": decoded}

    jctx = SerializationContext(json_topic, MessageField.VALUE)
    jser = JSONSerializer(json_schema, SchemaRegistryClient({"url": url}))
    jframed = jser(json.loads(json_record), jctx)
    jdes = JSONDeserializer(None, schema_registry_client=SchemaRegistryClient({"url": url}))
    registered = client.get_latest_version(json_topic + "-value")
    out["json"] = {"magic": jframed[0], "id": int.from_bytes(jframed[1:5], "big"), "registered_id": registered.schema_id,
                   "type": registered.schema.schema_type, "decoded": jdes(jframed, jctx)}

    if len(sys.argv) > 9:
        out["protobuf"] = protobuf_steps(url, *sys.argv[9:13])

    print(json.dumps(out, default=str))


def item_class():
    """Message ferry.e2e.Item {int64 id = 1; string name = 2; google.protobuf.Timestamp at = 3;},
    built as protoc would (no protoc here)."""
    f = descriptor_pb2.FileDescriptorProto(name="ferry_e2e_item.proto", package="ferry.e2e", syntax="proto3")
    f.dependency.append("google/protobuf/timestamp.proto")
    m = f.message_type.add(name="Item")
    T = descriptor_pb2.FieldDescriptorProto
    m.field.add(name="id", number=1, type=T.TYPE_INT64, label=T.LABEL_OPTIONAL, json_name="id")
    m.field.add(name="name", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL, json_name="name")
    m.field.add(name="at", number=3, type=T.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp", label=T.LABEL_OPTIONAL, json_name="at")
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("ferry.e2e.Item"))


def protobuf_steps(url, topic, schema, bad, record):
    subject = topic + "-value"
    client = SchemaRegistryClient({"url": url})
    out = {"register": client.register_schema(subject, Schema(schema, "PROTOBUF"))}
    latest = SchemaRegistryClient({"url": url}).get_latest_version(subject)
    out["latest"] = {"id": latest.schema_id, "version": latest.version, "type": latest.schema.schema_type}
    found = client.lookup_schema(subject, Schema(schema, "PROTOBUF"))
    out["lookup"] = {"id": found.schema_id, "version": found.version}
    by_id = SchemaRegistryClient({"url": url}).get_schema(out["register"])
    out["by_id"] = {"type": by_id.schema_type, "schema": by_id.schema_str}
    try:
        client.register_schema(subject, Schema(bad, "PROTOBUF"))
        out["refused"] = None
    except SchemaRegistryError as e:
        out["refused"] = {"http_status": e.http_status_code, "code": e.error_code, "message": e.error_message}

    cls = item_class()
    rec = json.loads(record)
    msg = cls(id=rec["id"], name=rec["name"])
    msg.at.FromMilliseconds(rec["at_ms"])
    ctx = SerializationContext(topic, MessageField.VALUE)
    framed = ProtobufSerializer(cls, SchemaRegistryClient({"url": url}))(msg, ctx)
    latest_framed = ProtobufSerializer(cls, SchemaRegistryClient({"url": url}),
                                       {"auto.register.schemas": False, "use.latest.version": True})(msg, ctx)
    decoded = ProtobufDeserializer(cls, {}, SchemaRegistryClient({"url": url}))(framed, ctx)
    out["serde"] = {"magic": framed[0], "id": int.from_bytes(framed[1:5], "big"), "index": framed[5],
                    "latest_id": int.from_bytes(latest_framed[1:5], "big"),
                    "decoded": {"id": decoded.id, "name": decoded.name, "at_ms": decoded.at.ToMilliseconds()}}
    return out


if __name__ == "__main__":
    main()
