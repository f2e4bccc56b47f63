// Interop test of progress tracking with the stock npm client faktory-worker,
// unchanged: a job opts in with custom.track (a plain `custom` field) and
// TRACK goes through the client's generic send(), as any Node program would
// (the client has no tracking API; docs/enterprise.md, "Tracking").
// Started by tests/scripts/interop.sh with FAKTORY_URL set (single node,
// then distributed mode).
//
// Checks: an untracked job answers exactly the unknown record; a tracked
// enqueued job reads "enqueued"; the job's handler reports its progress
// while it works (state "working" from another connection); after the ACK
// the record says "success" and keeps the last percent and desc; bad input
// is an error, not a crash.
"use strict";

const faktory = require("faktory-worker");
const tap = require("./tap");
const { check } = tap;
const DEADLINE_MS = 30000;
const until = (what, fn) => tap.until(what, fn, DEADLINE_MS);

async function main() {
  if (!process.env.FAKTORY_URL) throw new Error("FAKTORY_URL is not set");
  const client = await faktory.connect();
  await client.flush();
  const get = async (jid) => JSON.parse(await client.send(["TRACK", "GET", jid]));

  const plain = client.job("plain", 1);
  plain.queue = "tracked";
  await plain.push();
  check((await client.send(["TRACK", "GET", plain.jid])) ===
        JSON.stringify({ jid: plain.jid, state: "unknown", updated_at: "" }),
        "an untracked job answers the exact unknown record");

  const job = client.job("transcode", "movie.mkv");
  job.queue = "tracked";
  job.custom = { track: 1 };
  await job.push();
  check((await get(job.jid)).state === "enqueued", "a tracked job waits as enqueued");
  check((await client.send(["TRACK", "SET", JSON.stringify({ jid: job.jid, percent: 1, desc: null })])) === "OK",
        "TRACK SET on an enqueued job answers OK");

  let release;
  const gate = new Promise((r) => { release = r; });
  let seenWorking = null;
  faktory.register("transcode", async () => {
    const reporter = await faktory.connect();
    await reporter.send(["TRACK", "SET", JSON.stringify({ jid: job.jid, percent: 50, desc: "pass 2 of 3" })]);
    seenWorking = await get(job.jid);
    await reporter.close();
    await gate;
  });
  faktory.register("plain", async () => {});
  const worker = await faktory.work({ queues: ["tracked"], concurrency: 2 });
  await until("the handler's progress report", () => seenWorking);
  check(seenWorking.state === "working" && seenWorking.percent === 50 && seenWorking.desc === "pass 2 of 3",
        `while it works: ${JSON.stringify(seenWorking)}`);
  release();
  const done = await until("the ACK", async () => { const t = await get(job.jid); return t.state === "success" && t; });
  check(done.percent === 50 && done.desc === "pass 2 of 3" && /Z$/.test(done.updated_at),
        `after the ACK: ${JSON.stringify(done)}`);
  await worker.stop();

  let err = null;
  try { await client.send(["TRACK", "SET", "{}"]); } catch (e) { err = e; }
  check(err && /jid must be a non-empty string/.test(String(err.message || err)), `bad input is an error (${err && err.message})`);
  check((await client.info()).faktory !== undefined, "the connection still works");
  await client.close();
}

tap.run("track interop", main, DEADLINE_MS * 2);
