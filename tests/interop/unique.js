// Interop test of unique jobs and expiring jobs with the stock npm client
// faktory-worker, unchanged: both are plain `custom` fields (docs/enterprise.md).
// Started by tests/scripts/interop.sh with FAKTORY_URL set.
//
// Checks: a job with custom.unique_for is accepted; an identical one is
// refused with an error mentioning NOTUNIQUE (the promise rejects); another
// args value is accepted; after the holder runs (ACK) the same job is
// accepted again; PUSHB (pushBulk) reports the duplicate in its map; a job
// with custom.expires_in that passes before any worker fetches never runs,
// the job behind it does, and INFO counts it under rebound.expired.
"use strict";

const faktory = require("faktory-worker");
const tap = require("./tap");
const { check, sleep } = tap;
const DEADLINE_MS = 30000;
const until = (what, fn) => tap.until(what, fn, DEADLINE_MS);

async function pushError(job) {
  try {
    await job.push();
    return null;
  } catch (e) {
    return e;
  }
}

async function main() {
  if (!process.env.FAKTORY_URL) throw new Error("FAKTORY_URL is not set");
  const client = await faktory.connect();
  await client.flush();

  const uniq = (arg) => {
    const j = client.job("uniq", arg);
    j.queue = "unique";
    j.custom = { unique_for: 60 };
    return j;
  };
  check((await pushError(uniq(1))) === null, "a unique job is accepted");
  const err = await pushError(uniq(1));
  check(err && /NOTUNIQUE/.test(String(err.message || err)),
        `an identical one is refused with NOTUNIQUE (${err && (err.message || err)})`);
  check((await pushError(uniq(2))) === null, "other args are another job");

  const dup = uniq(2);
  const fresh = uniq(3);
  const rejected = await client.pushBulk([dup.toJSON(), fresh.toJSON()]);
  const reason = rejected && rejected[dup.jid] && (rejected[dup.jid].reason || rejected[dup.jid]);
  check(reason && /NOTUNIQUE/.test(String(reason)) && !(fresh.jid in rejected),
        `PUSHB reports only the duplicate (${JSON.stringify(rejected)})`);

  const ran = [];
  faktory.register("uniq", async (n) => {
    ran.push(n);
  });
  const ranExp = [];
  faktory.register("exp", async (n) => {
    ranExp.push(n);
  });

  // expiring: pushed, and past its time before any worker fetches
  const e = client.job("exp", "stale");
  e.queue = "expiring";
  e.custom = { expires_in: 1 };
  await e.push();
  await sleep(1200);
  const live = client.job("exp", "live");
  live.queue = "expiring";
  await live.push();

  const worker = await faktory.work({ queues: ["unique", "expiring"], concurrency: 2 });
  await until("the unique jobs to run", () => ran.length === 3);
  await sleep(200);
  check((await pushError(uniq(1))) === null, "after the holder's ACK the same job is accepted");
  await until("the re-pushed job to run", () => ran.length === 4);
  await until("the live job to run", () => ranExp.includes("live"));
  await sleep(300);
  await worker.stop();
  check(ran.filter((n) => n === 1).length === 2 && ran.length === 4, `each accepted job ran once (${ran})`);
  check(!ranExp.includes("stale"), `the expired job never ran (${ranExp})`);
  const info = await client.info();
  check(info.rebound && info.rebound.expired >= 1, `INFO counts it (rebound.expired ${info.rebound && info.rebound.expired})`);
  await client.close();
}

tap.run("unique interop", main, DEADLINE_MS * 2);
