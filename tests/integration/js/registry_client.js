// @kafkajs/confluent-schema-registry against kafkalite's Schema Registry, for
// tests/integration/schema_registry/test_kafkajs_registry.py. Usage:
//   node registry_client.js REGISTRY_URL BOOTSTRAP TOPIC
// Prints one JSON line per fact; exits non-zero on failure.
"use strict";
const { Kafka, logLevel } = require("kafkajs");
const { SchemaRegistry, SchemaType } = require("@kafkajs/confluent-schema-registry");

const [url, bootstrap, topic] = process.argv.slice(2);
const registry = new SchemaRegistry({ host: url });
const kafka = new Kafka({ clientId: "kafkajs-registry", brokers: [bootstrap],
                          logLevel: logLevel.WARN, retry: { retries: 8, initialRetryTime: 100 } });
function out(fact) { process.stdout.write(JSON.stringify(fact) + "\n"); }
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const AVRO = JSON.stringify({ type: "record", name: "Click", namespace: "js",
                              fields: [{ name: "page", type: "string" }] });
const PROTO = 'syntax = "proto3";\npackage js;\nmessage Visit {\n  string page = 1;\n  int32 n = 2;\n}\n';
const JSONS = JSON.stringify({ type: "object", properties: { page: { type: "string" } },
                               required: ["page"] });

async function main() {
  const avro = await registry.register({ type: SchemaType.AVRO, schema: AVRO },
                                       { subject: `${topic}-value` });
  const again = await registry.register({ type: SchemaType.AVRO, schema: AVRO },
                                        { subject: `${topic}-value` });
  out({ avroId: avro.id, sameId: again.id === avro.id });
  const proto = await registry.register({ type: SchemaType.PROTOBUF, schema: PROTO },
                                        { subject: "js-proto" });
  const pbytes = await registry.encode(proto.id, { page: "/p", n: 3 });
  out({ proto: await registry.decode(pbytes) });
  const json = await registry.register({ type: SchemaType.JSON, schema: JSONS },
                                       { subject: "js-json" });
  const jbytes = await registry.encode(json.id, { page: "/j" });
  out({ json: await registry.decode(jbytes) });
  let refused = null;
  try {
    await registry.encode(json.id, { nopage: 1 });
  } catch (e) { refused = e.name; }
  out({ jsonRefused: refused });

  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic, messages: [
    { value: await registry.encode(avro.id, { page: "/a" }) },
    { value: await registry.encode(avro.id, { page: "/b" }) }] });
  await producer.disconnect();

  const consumer = kafka.consumer({ groupId: `${topic}-js`, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const seen = [];
  await consumer.run({ eachMessage: async ({ message }) => {
    seen.push(await registry.decode(message.value));
  } });
  const deadline = Date.now() + 30000;
  while (seen.length < 3 && Date.now() < deadline) await sleep(50);
  await consumer.disconnect();
  out({ decoded: seen.map((v) => v.page).sort() });
}

main().catch((e) => { process.stderr.write(String(e.stack || e) + "\n"); process.exit(1); });
