// Interop test: the stock npm client faktory-worker, unchanged, as producer and
// worker against `rebound serve` (started by tests/scripts/interop.sh, which sets
// FAKTORY_URL, password included, and a config with
// [retry.jobtypes.flaky] ftl = "2 1s 1s").
//
// Checks: INFO sizes after pushing; every job succeeds; a failing job retries on
// the configured schedule (2 retries, >= 1 s apart) and ends dead; INFO counts.
"use strict";

const faktory = require("faktory-worker");
const tap = require("./tap");
const { check } = tap;
const until = (what, fn) => tap.until(what, fn, DEADLINE_MS);

const N_DEFAULT = 6; // jobs pushed one by one into "default"
const N_OTHER = 4; // jobs pushed with PUSHB into "other"
const FLAKY_RETRIES = 2; // from the config the script writes
const FLAKY_MIN_GAP_MS = 1000; // the config's delay before each retry
const DEADLINE_MS = 60000;

async function main() {
  if (!process.env.FAKTORY_URL) throw new Error("FAKTORY_URL is not set");
  const client = await faktory.connect();

  // --- producer ------------------------------------------------------------
  await client.flush();
  const okJids = [];
  for (let i = 0; i < N_DEFAULT; i++) {
    okJids.push(await client.job("ok", i, `text ${i}`).push());
  }
  const bulk = [];
  for (let i = 0; i < N_OTHER; i++) {
    const job = client.job("ok", 100 + i);
    job.queue = "other";
    bulk.push(job);
  }
  const rejected = await client.pushBulk(bulk);
  check(Object.keys(rejected).length === 0, "PUSHB accepted every job");
  const later = client.job("ok", "later");
  later.at = new Date(Date.now() + 3600 * 1000).toISOString();
  await later.push();
  const flakyJid = await client.job("flaky", "x").push();

  let info = await client.info();
  check(info.faktory.queues.default === N_DEFAULT + 1,
        `INFO queues.default is ${N_DEFAULT + 1} (got ${info.faktory.queues.default})`);
  check(info.faktory.queues.other === N_OTHER,
        `INFO queues.other is ${N_OTHER} (got ${info.faktory.queues.other})`);
  check(info.faktory.tasks.Scheduled.size === 1,
        `INFO Scheduled size is 1 (got ${info.faktory.tasks.Scheduled.size})`);

  // --- worker --------------------------------------------------------------
  const seen = new Set();
  const flakyRuns = [];
  faktory.register("ok", async (n) => {
    seen.add(n);
  });
  faktory.register("flaky", async () => {
    flakyRuns.push(Date.now());
    throw new Error(`flaky failure #${flakyRuns.length}`);
  });
  const worker = await faktory.work({ queues: ["default", "other"], concurrency: 3 });

  await until("every ok job", () => seen.size === N_DEFAULT + N_OTHER);
  check(seen.size === N_DEFAULT + N_OTHER, `all ${N_DEFAULT + N_OTHER} ok jobs ran`);

  info = await until("the flaky job to be dead", async () => {
    const i = await client.info();
    return i.faktory.tasks.Dead.size === 1 ? i : null;
  });
  check(flakyRuns.length === FLAKY_RETRIES + 1,
        `flaky ran ${FLAKY_RETRIES + 1} times (got ${flakyRuns.length})`);
  const gaps = flakyRuns.slice(1).map((t, i) => t - flakyRuns[i]);
  // 10 ms of slack for the two clocks' rounding; the server must never retry early.
  check(gaps.every((g) => g >= FLAKY_MIN_GAP_MS - 10),
        `flaky retries waited >= ${FLAKY_MIN_GAP_MS} ms each (gaps ${gaps.join(", ")} ms)`);

  info = await until("queues to drain", async () => {
    const i = await client.info();
    const q = i.faktory.queues;
    return (q.default || 0) === 0 && (q.other || 0) === 0 && i.faktory.tasks.Busy.size === 0
      ? i
      : null;
  });
  const f = info.faktory;
  check(f.tasks.Dead.size === 1 && f.tasks.Retries.size === 0,
        `INFO Dead 1, Retries 0 (got ${f.tasks.Dead.size}, ${f.tasks.Retries.size})`);
  check(f.tasks.Scheduled.size === 1, `INFO Scheduled still 1 (got ${f.tasks.Scheduled.size})`);
  check(f.total_failures === FLAKY_RETRIES + 1,
        `INFO total_failures is ${FLAKY_RETRIES + 1} (got ${f.total_failures})`);
  check(f.total_processed >= N_DEFAULT + N_OTHER,
        `INFO total_processed >= ${N_DEFAULT + N_OTHER} (got ${f.total_processed})`);
  check(f.tasks.Workers.size >= 1, `INFO Workers >= 1 (got ${f.tasks.Workers.size})`);

  // The dead job is still there, and the stock client's MUTATE moves it back.
  await client.dead.withJids(flakyJid).requeue();
  await until("the requeued flaky job to run again", () => flakyRuns.length > FLAKY_RETRIES + 1);
  check(flakyRuns.length > FLAKY_RETRIES + 1, "MUTATE requeue from dead ran the job again");

  await worker.stop();
  await client.close();
  return okJids;
}

tap.run("interop", main, DEADLINE_MS * 2);
