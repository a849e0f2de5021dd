'use strict';
// kafkajs consume runner of Ferry's client harness (contract: ../README.md). kafkajs has no
// group-less consumer — its Consumer always joins a group — so only --group runs are supported;
// without --group the runner exits 2. The consumer subscribes, runs with autoCommit off and prints
// one JSON line per record as eachMessage delivers it; --commit commits the printed records'
// offsets with commitOffsets before disconnecting.
const { CompressionTypes, CompressionCodecs } = require('kafkajs');
const LZ4 = require('kafkajs-lz4');
const connection = require('./connection');
const { usage } = connection;

// A consumer decodes whatever codec the batches carry; kafkajs itself ships gzip only, so the
// published snappy and lz4 codecs are registered (there is none for zstd that builds on Node 20).
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy');
CompressionCodecs[CompressionTypes.LZ4] = new LZ4().codec;

const EXIT_OK = 0, EXIT_FAILED = 1;

function parse(argv) {
  if (argv[0] !== 'consume') usage('usage: consume --bootstrap H:P --topic T --count N --group G [flags]');
  const o = { timeout: 60, from: 'earliest' };
  for (let i = 1; i < argv.length; i++) {
    const name = argv[i];
    if (name === '--commit') { // the one flag without a value
      o.commit = true;
      continue;
    }
    const v = argv[++i];
    if (v === undefined) usage(`${name} needs a value`);
    if (connection.setFlag(o, name, v)) continue;
    switch (name) {
      case '--topic': o.topic = v; break;
      case '--count':
      case '--partition':
        if (!/^\d+$/.test(v)) usage(`${name} must be a number >= 0, got ${v}`);
        o[name.slice(2)] = Number(v); break;
      case '--from':
        if (!['earliest', 'latest'].includes(v) && !/^\d+$/.test(v)) usage(`--from must be earliest, latest or an offset, got ${v}`);
        o.from = v; break;
      case '--group': o.group = v; break;
      case '--timeout':
        o.timeout = Number(v);
        if (!(o.timeout > 0)) usage(`--timeout must be positive seconds, got ${v}`);
        break;
      default: usage(`unknown flag ${name}`);
    }
  }
  connection.check(o);
  if (!o.topic) usage('--topic is required');
  if (!(o.count >= 1)) usage('--count must be >= 1');
  if (o.commit && o.group === undefined) usage('--commit needs --group');
  if (o.group === undefined) usage('kafkajs has no group-less consumer (its Consumer always joins a group): only --group runs are supported');
  if (o.partition !== undefined || /^\d+$/.test(o.from)) usage('--partition and --from OFFSET are for group-less runs');
  return o;
}

// fatal: bytes that are not UTF-8 throw; ignoreBOM: a leading BOM is kept as the bytes were.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// Sets name to b as text, null, or (bytes that are not UTF-8) name_b64 to its base64.
function textOrB64(obj, name, b) {
  if (b === null || b === undefined) {
    obj[name] = null;
    return;
  }
  try {
    obj[name] = utf8.decode(b);
  } catch (e) {
    obj[`${name}_b64`] = b.toString('base64');
  }
}

function line(partition, m) {
  const out = { partition, offset: Number(m.offset) };
  textOrB64(out, 'key', m.key);
  textOrB64(out, 'value', m.value);
  // kafkajs hands headers over as an object: a repeated name's values come as an array.
  out.headers = [];
  for (const [name, vs] of Object.entries(m.headers || {})) {
    for (const v of Array.isArray(vs) ? vs : [vs]) {
      const h = {};
      textOrB64(h, 'v', v);
      out.headers.push('v' in h ? [name, h.v] : [name, null, h.v_b64]);
    }
  }
  out.timestamp_ms = Number(m.timestamp);
  return JSON.stringify(out);
}

async function main() {
  const o = parse(process.argv.slice(2));
  let printed = 0;
  const deadline = setTimeout(() => {
    process.stderr.write(`kafkajs runner: read ${printed} of ${o.count} records before the deadline (${o.timeout}s)\n`);
    process.exit(EXIT_FAILED);
  }, o.timeout * 1000);
  // maxWaitTimeInMs 500 instead of 5000: disconnect waits for the fetch in flight, so with the
  // default a run would often take 5 s longer (seen with kafkajs 2.2.4).
  const consumer = connection.kafka(o).consumer({ groupId: o.group, maxWaitTimeInMs: 500 });
  const next = new Map(); // partition → offset after its last printed record
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  await consumer.connect();
  await consumer.subscribe({ topics: [o.topic], fromBeginning: o.from === 'earliest' });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      if (printed >= o.count) return; // fetched after the count: not printed, not committed
      process.stdout.write(line(partition, message) + '\n');
      printed++;
      next.set(partition, (BigInt(message.offset) + 1n).toString());
      if (printed === o.count) finish();
    },
  });
  // Not from inside eachMessage: disconnect waits for it to return.
  await finished;
  if (o.commit) await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic: o.topic, partition, offset })));
  await consumer.disconnect(); // leaves the group
  clearTimeout(deadline);
  return EXIT_OK;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`kafkajs runner: ${e.stack || e}\n`);
  process.exit(EXIT_FAILED);
});
