'use strict';
// kafkajs runner of Ferry's client harness (contract: ../README.md). Sends the stdin JSON-lines
// records with one unmodified kafkajs producer.send() call and prints one JSON line per record.
// Only options a flag names are set; otherwise kafkajs's defaults apply (acks=-1, not idempotent,
// no compression, its DefaultPartitioner = Java-compatible murmur2).
const readline = require('node:readline');
const { CompressionTypes, CompressionCodecs, Partitioners } = require('kafkajs');
const connection = require('./connection');
const { usage } = connection;

const EXIT_OK = 0, EXIT_FAILED = 1;

function parse(argv) {
  if (argv[0] !== 'produce') usage('usage: produce --bootstrap H:P --topic T [flags] < records.jsonl');
  const o = { timeout: 60 };
  for (let i = 1; i < argv.length; i += 2) {
    const name = argv[i], v = argv[i + 1];
    if (v === undefined) usage(`${name} needs a value`);
    if (connection.setFlag(o, name, v)) continue;
    switch (name) {
      case '--topic': o.topic = v; break;
      case '--acks':
        if (!['0', '1', 'all'].includes(v)) usage(`--acks must be 0, 1 or all, got ${v}`);
        o.acks = v; break;
      case '--compression':
        if (!['none', 'gzip', 'snappy', 'lz4', 'zstd'].includes(v)) usage(`--compression must be none, gzip, snappy, lz4 or zstd, got ${v}`);
        o.compression = v; break;
      case '--partition':
        if (!/^\d+$/.test(v)) usage(`--partition must be a number >= 0, got ${v}`);
        o.partition = Number(v); break;
      case '--idempotent':
        if (v !== 'true' && v !== 'false') usage(`--idempotent must be true or false, got ${v}`);
        o.idempotent = v === 'true'; break;
      case '--key-field': o.keyField = v; break;
      case '--timeout':
        o.timeout = Number(v);
        if (!(o.timeout > 0)) usage(`--timeout must be positive seconds, got ${v}`);
        break;
      default: usage(`unknown flag ${name}`);
    }
  }
  connection.check(o);
  if (!o.topic) usage('--topic is required');
  return o;
}

async function readRecords(keyField) {
  const out = [];
  let n = 0;
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    n++;
    if (line.trim() === '') continue;
    let r;
    try { r = JSON.parse(line); } catch (e) { usage(`line ${n}: ${e.message}`); }
    if (r === null || typeof r !== 'object' || !(typeof r.value === 'string' || r.value === null)) usage(`line ${n}: want an object with a string or null value`);
    // A tombstone (null value) has no value to take the key from: it keeps its own.
    if (keyField !== undefined && r.value !== null) {
      let doc;
      try { doc = JSON.parse(r.value); } catch (e) { usage(`line ${n}: --key-field ${keyField}: value is not JSON`); }
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) usage(`line ${n}: --key-field ${keyField}: value is not a JSON object`);
      const k = doc[keyField];
      r.key = k === undefined || k === null ? null : (typeof k === 'string' ? k : JSON.stringify(k));
    }
    out.push(r);
  }
  return out;
}

// Codecs kafkajs leaves to plug-ins: the published kafkajs-snappy and kafkajs-lz4 packages.
function codec(name) {
  switch (name) {
    case undefined: return undefined;
    case 'none': return CompressionTypes.None;
    case 'gzip': return CompressionTypes.GZIP;
    case 'snappy':
      CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy');
      return CompressionTypes.Snappy;
    case 'lz4': {
      const LZ4 = require('kafkajs-lz4');
      CompressionCodecs[CompressionTypes.LZ4] = new LZ4().codec;
      return CompressionTypes.LZ4;
    }
    case 'zstd':
      throw new Error('kafkajs: no zstd codec available (@kafkajs/zstd does not build on Node 20)');
  }
  throw new Error(`unknown compression ${name}`);
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === 'check') {
    console.log(`kafkajs ${require('kafkajs/package.json').version}`);
    return EXIT_OK;
  }
  const o = parse(argv);
  const recs = await readRecords(o.keyField);
  const lines = new Array(recs.length);
  const print = () => { process.stdout.write(lines.join('\n') + (lines.length ? '\n' : '')); };
  const fail = (msg) => { for (let i = 0; i < recs.length; i++) if (!lines[i]) lines[i] = JSON.stringify({ index: i, error: msg }); };

  const deadline = setTimeout(() => {
    fail(`no delivery report before the deadline (${o.timeout}s)`);
    print();
    process.exit(EXIT_FAILED);
  }, o.timeout * 1000);

  const kafka = connection.kafka(o);
  // The default partitioner, wrapped only to learn which partition it chose for each message:
  // send() reports a base offset per partition, not per message.
  const chosen = new Map();
  const createPartitioner = () => {
    const p = Partitioners.DefaultPartitioner();
    return (args) => {
      const part = p(args);
      chosen.set(args.message, part);
      return part;
    };
  };
  const producer = kafka.producer({
    createPartitioner,
    ...(o.idempotent !== undefined ? { idempotent: o.idempotent } : {}),
  });
  const messages = recs.map((r) => {
    const m = { key: r.key === undefined ? null : r.key, value: r.value };
    if (r.headers) m.headers = r.headers;
    if (r.timestamp_ms !== undefined && r.timestamp_ms !== null) m.timestamp = String(r.timestamp_ms);
    if (o.partition !== undefined) m.partition = o.partition;
    return m;
  });
  let code = EXIT_OK;
  try {
    const compression = codec(o.compression);
    await producer.connect();
    const req = { topic: o.topic, messages };
    if (o.acks !== undefined) req.acks = o.acks === 'all' ? -1 : Number(o.acks);
    if (compression !== undefined) req.compression = compression;
    const meta = await producer.send(req);
    const base = new Map();
    for (const m of meta) base.set(m.partition, m);
    const rank = new Map();
    messages.forEach((m, i) => {
      const part = m.partition !== undefined ? m.partition : chosen.get(m);
      const pm = base.get(part);
      const k = rank.get(part) || 0;
      rank.set(part, k + 1);
      if (pm === undefined) {
        // acks=0: kafkajs gets no response, so no offset is known.
        lines[i] = JSON.stringify({ index: i, partition: part === undefined ? -1 : part, offset: -1 });
      } else if (pm.errorCode) {
        lines[i] = JSON.stringify({ index: i, error: `kafkajs: partition ${part} error code ${pm.errorCode}` });
        code = EXIT_FAILED;
      } else {
        lines[i] = JSON.stringify({ index: i, partition: part, offset: Number(BigInt(pm.baseOffset) + BigInt(k)) });
      }
    });
  } catch (e) {
    fail(`kafkajs: ${e.name}: ${e.message}`);
    code = EXIT_FAILED;
  }
  try { await producer.disconnect(); } catch (e) { process.stderr.write(`kafkajs runner: disconnect: ${e.message}\n`); }
  clearTimeout(deadline);
  print();
  return code;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`kafkajs runner: ${e.stack || e}\n`);
  process.exit(EXIT_FAILED);
});
