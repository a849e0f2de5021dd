"""Drives Kafka Viewer's web UI (its Streamlit script, unmodified) headless with Streamlit's
AppTest and prints, as one JSON object, what its pages show for one topic: the connection
status, the topic list, the topic statistics and the messages loaded from the beginning.

usage: view.py --bootstrap HOST:PORT --topic TOPIC --count N
"""

import argparse
import json
import os
import sys
import tempfile

import kafka_viewer.ui
from streamlit.testing.v1 import AppTest


def texts(elements):
    return [e.value for e in elements]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--timeout", type=float, default=90)
    args = p.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        props = os.path.join(tmp, "kafka-viewer.properties")
        with open(props, "w") as f:
            f.write(f"kafka.bootstrap.servers={args.bootstrap}\n")
        # The UI reads --config from the command line, as `kafka-viewer --config` starts it.
        sys.argv = [kafka_viewer.ui.__file__, "--config", props]
        at = AppTest.from_file(kafka_viewer.ui.__file__, default_timeout=args.timeout)

        out = {"problems": []}

        def note(stage):
            for e in at.exception:
                out["problems"].append(f"{stage}: exception: {e.message}")
            for e in at.error:
                out["problems"].append(f"{stage}: error: {e.value}")

        # First page: the connection status and the topic list.
        at.run()
        note("start")
        out["subheaders"] = texts(at.subheader)
        if not at.selectbox:
            out["problems"].append("start: no topic list")
            print(json.dumps(out))
            return
        topics = at.selectbox[0]
        out["topics"] = list(topics.options)
        if args.topic not in out["topics"]:
            print(json.dumps(out))
            return

        # The topic's page: statistics, then every message from the beginning.
        topics.select(args.topic)
        at.run()
        note("topic")
        at.radio[0].set_value("From beginning")
        at.number_input[0].set_value(args.count)
        at.run()
        note("options")
        load = [b for b in at.button if b.label == "Load Messages"]
        if not load:
            out["problems"].append("topic: no Load Messages button")
            print(json.dumps(out))
            return
        load[0].click()
        at.run()
        note("load")
        out["metrics"] = {m.label: m.value for m in at.metric}
        out["warnings"] = texts(at.warning)
        out["expanders"] = [e.label for e in at.expander]
        out["values"] = [c.value for c in at.code]
        print(json.dumps(out))


if __name__ == "__main__":
    main()
