"""Produces keyed records to a primary-key table through Ferry with confluent-kafka-python's
Schema Registry serializers for both key and value (upserts, and tombstones: a key with a null
value), then consumes the table's records back with the matching deserializers.

Usage: keyed_roundtrip.py BOOTSTRAP REGISTRY_URL TOPIC FORMAT OPS_JSON EXPECT

The table is users(id BIGINT NOT NULL, name STRING, PRIMARY KEY (id)). FORMAT is avro,
json-schema or protobuf: the key is a UserKey record of the id, the value a User record of id
and name, in that format, registered by the serializers (auto.register.schemas). OPS_JSON is a
list of {"key": {"id": n}, "value": {"id": n, "name": s} or null}; EXPECT is how many records
to consume (rows another Fluss writer wrote too).

Prints one JSON object: "produced" (the partition and offset of each op, or its error) and
"consumed" (each record read back: partition, offset, the key's magic byte and schema id, the
decoded key and the decoded value, null for a tombstone).
"""
import datetime
import json
import sys

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext

AVRO_KEY = json.dumps({"type": "record", "name": "UserKey", "namespace": "ferry.e2e",
                       "fields": [{"name": "id", "type": "long"}]})
AVRO_VALUE = json.dumps({"type": "record", "name": "User", "namespace": "ferry.e2e",
                         "fields": [{"name": "id", "type": "long"},
                                    {"name": "name", "type": ["null", "string"], "default": None}]})
JSON_KEY = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "UserKey", "type": "object",
                       "properties": {"id": {"type": "integer"}}, "required": ["id"]})
JSON_VALUE = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "User", "type": "object",
                         "properties": {"id": {"type": "integer"}, "name": {"type": ["string", "null"]}},
                         "required": ["id"]})


def proto_classes():
    """UserKey and User built at run time (there is no protoc here), one file each."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    classes = []
    for file_name, name in (("ferry/e2e/user_key.proto", "UserKey"), ("ferry/e2e/user.proto", "User")):
        fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package="ferry.e2e", syntax="proto3")
        m = fdp.message_type.add(name=name)
        m.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL, json_name="id")
        if name == "User":
            m.oneof_decl.add(name="_name")
            m.field.add(name="name", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, json_name="name",
                        oneof_index=0, proto3_optional=True)
        pool.Add(fdp)
        classes.append(message_factory.GetMessageClass(pool.FindMessageTypeByName("ferry.e2e." + name)))
    return classes


def serdes(fmt, registry):
    """(key serializer, value serializer, key deserializer, value deserializer, to wire, from wire)."""
    conf = {"auto.register.schemas": True}
    if fmt == "avro":
        from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
        return (AvroSerializer(registry, AVRO_KEY, conf=conf), AvroSerializer(registry, AVRO_VALUE, conf=conf),
                AvroDeserializer(registry), AvroDeserializer(registry), lambda d, cls: d, lambda v: v)
    if fmt == "json-schema":
        from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
        return (JSONSerializer(JSON_KEY, registry, conf=conf), JSONSerializer(JSON_VALUE, registry, conf=conf),
                JSONDeserializer(None, schema_registry_client=registry),
                JSONDeserializer(None, schema_registry_client=registry), lambda d, cls: d, lambda v: v)
    if fmt == "protobuf":
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
        from google.protobuf import json_format
        key_cls, value_cls = proto_classes()
        dconf = {"use.deprecated.format": False}

        def to_wire(d, cls):
            return json_format.ParseDict(d, cls())

        def from_wire(m):
            if m is None:
                return None
            d = json_format.MessageToDict(m, preserving_proto_field_name=True)
            if "id" in d:  # the JSON mapping writes int64 as a string
                d["id"] = int(d["id"])
            return d
        return (ProtobufSerializer(key_cls, registry, conf=conf), ProtobufSerializer(value_cls, registry, conf=conf),
                ProtobufDeserializer(key_cls, dconf), ProtobufDeserializer(value_cls, dconf),
                lambda d, cls: to_wire(d, key_cls if cls == "key" else value_cls), from_wire)
    raise SystemExit("unknown format " + fmt)


def main():
    bootstrap, url, topic, fmt, ops, expect = sys.argv[1:7]
    ops, expect = json.loads(ops), int(expect)
    registry = SchemaRegistryClient({"url": url})
    key_ser, value_ser, key_des, value_des, to_wire, from_wire = serdes(fmt, registry)
    kctx, vctx = SerializationContext(topic, MessageField.KEY), SerializationContext(topic, MessageField.VALUE)

    produced = [None] * len(ops)

    def report(i):
        def cb(err, msg):
            produced[i] = {"error": str(err)} if err else {"partition": msg.partition(), "offset": msg.offset()}
        return cb

    # One record at a time, so that the update and the tombstone follow what they change.
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False})
    for i, op in enumerate(ops):
        key = key_ser(to_wire(op["key"], "key"), kctx)
        value = None if op["value"] is None else value_ser(to_wire(op["value"], "value"), vctx)
        p.produce(topic, key=key, value=value, on_delivery=report(i))
        p.flush(60)

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "keyed-" + topic,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    consumed = []
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=60)
    while len(consumed) < expect and datetime.datetime.now() < deadline:
        msg = c.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            consumed.append({"error": str(msg.error())})
            break
        k, v = msg.key(), msg.value()
        got = {"partition": msg.partition(), "offset": msg.offset(), "key_magic": k[0] if k else None,
               "key_id": int.from_bytes(k[1:5], "big") if k else None}
        try:
            got["key"] = from_wire(key_des(k, kctx))
            got["value"] = None if v is None else from_wire(value_des(v, vctx))
        except Exception as e:  # a record the deserializers refuse is the test's finding
            got["error"] = repr(e)
        consumed.append(got)
    c.close()
    print(json.dumps({"produced": produced, "consumed": consumed}))


if __name__ == "__main__":
    main()
