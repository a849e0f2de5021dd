"""What protobuf_roundtrip.py and protobuf_types_roundtrip.py share: message classes built at run
time from FileDescriptorProtos (there is no protoc here), the registry's latest version of a
subject, and producing messages through Ferry then consuming them back with ProtobufDeserializer.
"""
import base64
import datetime
import json
import urllib.request

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def latest_file(url, subject):
    """The subject's latest version as the serializer reads it (format=serialized)."""
    with urllib.request.urlopen(url + "/subjects/" + subject + "/versions/latest?format=serialized") as r:
        latest = json.loads(r.read())
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.standard_b64decode(latest["schema"]))
    if not fdp.name:
        fdp.name = "latest.proto"
    return fdp


def message_class(fdp, deps):
    """The class of fdp's first message; deps are the generated modules of the files it imports."""
    pool = descriptor_pool.DescriptorPool()
    for m in deps:
        pool.AddSerializedFile(m.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    name = fdp.message_type[0].name
    desc = pool.FindMessageTypeByName((fdp.package + "." if fdp.package else "") + name)
    return message_factory.GetMessageClass(desc)


def round_trip(bootstrap, topic, group, cls, ser, ctx, sent, produce, bad=None):
    """Produces the messages sent (when produce) and then bad, alone (when given), to partition 0
    of topic, and consumes len(sent) records back from the start with ProtobufDeserializer.

    Returns "schema_id" of the messages sent, "produced" (each record's partition and offset, or
    its error), "bad" (the bad record's delivery error, when bad is given) and "consumed" (each record read back:
    framed schema id, message-index bytes, whether it equals the message sent, and the decoded
    message in the JSON mapping with fields named as in the schema)."""
    produced = [None] * len(sent) if produce else []
    bad_result = [None]
    schema_id = None

    def report(into, i):
        def cb(err, msg):
            into[i] = {"error": str(err)} if err else {"partition": msg.partition(), "offset": msg.offset()}
        return cb

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i, m in enumerate(sent if produce else []):
        v = ser(m, ctx)
        schema_id = int.from_bytes(v[1:5], "big")
        p.produce(topic, value=v, partition=0, on_delivery=report(produced, i))
    p.flush(60)
    if bad is not None:
        p.produce(topic, value=ser(bad, ctx), partition=0, on_delivery=report(bad_result, 0))
        p.flush(60)

    # Without a registry client the deserializer decodes with the class it is given, after
    # reading the framing (magic byte, id, message indexes).
    des = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([topic])
    consumed = []
    deadline = datetime.datetime.now() + datetime.timedelta(seconds=60)
    while len(consumed) < len(sent) and datetime.datetime.now() < deadline:
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
    out = {"schema_id": schema_id, "produced": produced, "consumed": consumed}
    if bad is not None:
        out["bad"] = bad_result[0]
    return out
