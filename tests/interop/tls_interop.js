// TLS interop: the stock npm client faktory-worker, unchanged, as producer and
// worker against `rebound serve` with server.tls_cert/tls_key set (started by
// tests/scripts/tls_interop.sh with a self-signed certificate made by the
// openssl command line). faktory-worker speaks TLS when given `tlsOptions`
// (passed to Node's tls.connect); here the certificate is its CA, so Node's
// verification stays on (no NODE_TLS_REJECT_UNAUTHORIZED=0).
//
// Env: FAKTORY_URL (tcp://:PASSWORD@127.0.0.1:PORT), REBOUND_TLS_CA (the PEM file).
"use strict";

const fs = require("fs");
const tls = require("tls");
const faktory = require("faktory-worker");
const tap = require("./tap");
const { check } = tap;
const until = (what, fn) => tap.until(what, fn, DEADLINE_MS);

const N = 12; // jobs pushed one by one
const NB = 5; // jobs pushed with PUSHB
const DEADLINE_MS = 30000;

// Opens a raw TLS socket with the given options; resolves with the first
// line the server sends, or rejects with the TLS error.
function firstLine(port, options) {
  return new Promise((resolve, reject) => {
    const s = tls.connect(port, "127.0.0.1", options, () => {});
    let buf = "";
    s.on("data", (d) => {
      buf += d.toString();
      const i = buf.indexOf("\r\n");
      if (i >= 0) {
        s.destroy();
        resolve(buf.slice(0, i));
      }
    });
    s.on("error", (e) => reject(e));
  });
}

async function main() {
  const url = process.env.FAKTORY_URL;
  const caFile = process.env.REBOUND_TLS_CA;
  if (!url || !caFile) throw new Error("FAKTORY_URL and REBOUND_TLS_CA must be set");
  const tlsOptions = { ca: fs.readFileSync(caFile) };
  const port = Number(new URL(url).port);

  // Node checks the certificate: without the CA the handshake is refused.
  let refused = null;
  try {
    await firstLine(port, {});
  } catch (e) {
    refused = e;
  }
  check(refused && /self[-_ ]signed/i.test(String(refused.code || refused.message)),
        `without the CA Node refuses the certificate (${refused && (refused.code || refused.message)})`);
  // the greeting carries the password's salt (tls_interop.sh sets one)
  const hi = await firstLine(port, tlsOptions);
  const greeting = hi.startsWith("+HI ") ? JSON.parse(hi.slice(4)) : {};
  check(greeting.v === 2 && typeof greeting.s === "string", `with the CA the server greets over TLS (${hi})`);

  const client = await faktory.connect({ url, tlsOptions });
  for (let i = 0; i < N; i++) await client.job("tls_ok", i).push();
  const bulk = [];
  for (let i = 0; i < NB; i++) bulk.push(client.job("tls_ok", 100 + i));
  const rejected = await client.pushBulk(bulk);
  check(Object.keys(rejected).length === 0, "PUSHB over TLS accepted every job");
  const failJid = await client.job("tls_fail", "x").push();
  let info = await client.info();
  check(info.faktory.queues.default === N + NB + 1,
        `INFO over TLS: queues.default is ${N + NB + 1} (got ${info.faktory.queues.default})`);

  const seen = new Set();
  let failures = 0;
  faktory.register("tls_ok", async (n) => {
    seen.add(n);
  });
  faktory.register("tls_fail", async () => {
    failures++;
    throw new Error("fails over tls");
  });
  const worker = await faktory.work({ url, tlsOptions, queues: ["default"], concurrency: 3 });
  await until("every job to run", () => seen.size === N + NB && failures >= 1);
  check(seen.size === N + NB, `the worker ran all ${N + NB} jobs over TLS`);
  info = await until("the failed job in retries", async () => {
    const i = await client.info();
    return i.faktory.tasks.Retries.size === 1 && i.faktory.tasks.Busy.size === 0 ? i : null;
  });
  check(info.faktory.total_processed >= N + NB,
        `INFO total_processed >= ${N + NB} (got ${info.faktory.total_processed})`);
  check(info.faktory.total_failures === 1, `INFO total_failures is 1 (got ${info.faktory.total_failures})`);
  const state = await client.send(["JOB", JSON.stringify({ jid: failJid })]).catch(() => null);
  check(state && JSON.parse(state).state === "retries", "the failed job waits in retries");

  await worker.stop();
  await client.close();
}

tap.run("tls interop", main, DEADLINE_MS * 2);
