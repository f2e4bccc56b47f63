// Drives a PostgreSQL job queue the way build/bench/loadgen drives Rebound,
// for bench/pg/run.sh: P producers push N jobs (in their own process, as the
// load generator is its own process), W workers complete them, and each job
// is checked done exactly once. Prints "workload.metric value" lines.
//
//   node peer.js --system graphile|pgboss --workload lifecycle|retries
//                --jobs N [--producers 4] [--workers 8] [--batch B]
//   connection: PGHOST (socket directory), PGPORT, PGUSER, PGDATABASE
//
// graphile-worker: --batch 1 is addJob per job, B > 1 is addJobs(B); the
// runner has concurrency W, a local queue and batched completions (its
// documented batching options). pg-boss: send per job; W work() loops with
// batchSize 100 at the shortest polling interval it accepts (0.5 s).
// retries: jobs with seq % 100 < 10 fail their first attempt, with the
// shortest retry delay each system offers (pg-boss 0; graphile-worker has a
// fixed exp(attempts) s backoff, 2.7 s for the first retry).
// The timed phase ends when the database holds every job as completed
// (both queues complete asynchronously after the handler returns).
// --role setup installs the system's schema and exits (run before the
// measured run, as Rebound's migrate is).
'use strict';
const { fork } = require('child_process');
const { Pool } = require('pg');

function parseArgs(argv) {
  const o = { producers: 4, workers: 8, batch: 1, role: 'main' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, ''), v = argv[i + 1];
    if (v === undefined) throw new Error(`peer.js: ${argv[i]} needs a value`);
    o[k] = ['system', 'workload', 'role'].includes(k) ? v : Number(v);
  }
  if (!['graphile', 'pgboss'].includes(o.system)) throw new Error(`peer.js: --system: '${o.system}' is not graphile or pgboss`);
  if (!['lifecycle', 'retries'].includes(o.workload)) throw new Error(`peer.js: --workload: '${o.workload}' is not lifecycle or retries`);
  for (const k of ['jobs', 'producers', 'workers', 'batch'])
    if (!Number.isInteger(o[k]) || o[k] < 1) throw new Error(`peer.js: --${k}: '${o[k]}' is not a positive integer`);
  return o;
}

const O = parseArgs(process.argv.slice(2));
const QUEUE = 'bench';
const planned = (seq) => O.workload === 'retries' && seq % 100 < 10;
const pool = (max) => new Pool({ max }); // PG* from the environment
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// graphile-worker's logger: errors only, not the planned failures.
const logFactory = () => (level, msg) => {
  if (level === 'error' && !/planned failure/.test(msg)) console.error(`peer.js: graphile-worker: ${msg}`);
};
const plannedCount = () => { let n = 0; for (let s = 0; s < O.jobs; s++) n += planned(s); return n; };

// The jobs of producer p: seqs p, p + P, ... in batches of O.batch.
function* shares(p) {
  let cur = [];
  for (let s = p; s < O.jobs; s += O.producers) {
    cur.push(s);
    if (cur.length === O.batch) { yield cur; cur = []; }
  }
  if (cur.length) yield cur;
}

// ---- producer process -------------------------------------------------
async function producer() {
  let push, close;
  if (O.system === 'graphile') {
    const { makeWorkerUtils, Logger } = require('graphile-worker');
    const pgPool = pool(O.producers);
    const utils = await makeWorkerUtils({ pgPool, logger: new Logger(logFactory) });
    const spec = (s) => ({ identifier: QUEUE, payload: { seq: s }, maxAttempts: 2 });
    push = (seqs) => seqs.length === 1
      ? utils.addJob(QUEUE, { seq: seqs[0] }, { maxAttempts: 2 })
      : utils.addJobs(seqs.map(spec));
    close = async () => { await utils.release(); await pgPool.end(); };
  } else {
    const PgBoss = require('pg-boss');
    const boss = new PgBoss({ max: O.producers, supervise: false, schedule: false, migrate: false });
    boss.on('error', (e) => console.error(`peer.js: pg-boss: ${e.message}`));
    await boss.start();
    push = async (seqs) => {
      if (seqs.length === 1) return boss.send(QUEUE, { seq: seqs[0] });
      return boss.insert(seqs.map((s) => ({ name: QUEUE, data: { seq: s } })));
    };
    close = () => boss.stop({ graceful: false, wait: true });
  }
  process.send({ ready: true });
  await new Promise((r) => process.once('message', r)); // "go"
  await Promise.all(Array.from({ length: O.producers }, async (_, p) => {
    for (const seqs of shares(p)) await push(seqs);
  }));
  // PEER_DUP_SEQ=N: job N pushed once more, as if the queue ran it twice;
  // the run must report a duplicate (bench_pg_quick checks the checker).
  if (process.env.PEER_DUP_SEQ) await push([Number(process.env.PEER_DUP_SEQ)]);
  process.send({ pushed: true });
  await close();
}

// ---- worker (main) process --------------------------------------------
async function main() {
  const done = new Uint8Array(O.jobs); // handler successes per seq
  let distinct = 0, duplicates = 0, fails = 0, foreign = 0;
  const failed = new Uint8Array(O.jobs);
  let allDone;
  const allDoneP = new Promise((r) => { allDone = r; });
  // One job's handler: fail a planned first attempt, else count it done.
  const handle = (seq, attemptNo) => {
    if (!Number.isInteger(seq) || seq < 0 || seq >= O.jobs) { foreign++; throw new Error(`not a job of this run: ${seq}`); }
    // A planned failure fails once; a second first attempt of the job (run
    // twice) completes, and is then counted a duplicate below.
    if (planned(seq) && attemptNo === 1 && !failed[seq]) {
      failed[seq] = 1; fails++;
      return false;
    }
    if (done[seq]++) { duplicates++; console.error(`peer.js: job ${seq} completed again (duplicate)`); }
    else if (++distinct === O.jobs) allDone();
    return true;
  };

  const check = pool(2);
  let stop, left;
  if (O.system === 'graphile') {
    const { run, Logger } = require('graphile-worker');
    const pgPool = pool(O.workers + 2);
    const runner = await run({
      pgPool, concurrency: O.workers, noHandleSignals: true, logger: new Logger(logFactory),
      pollInterval: 2000,
      preset: { worker: { localQueue: { size: O.workers * 4 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
      taskList: {
        [QUEUE]: async (payload, helpers) => {
          if (!handle(payload.seq, helpers.job.attempts)) throw new Error('planned failure');
        },
      },
    });
    stop = async () => { await runner.stop(); await pgPool.end(); };
    // graphile-worker deletes a job when it completes.
    left = async () => Number((await check.query('SELECT count(*) AS n FROM graphile_worker._private_jobs')).rows[0].n);
  } else {
    const PgBoss = require('pg-boss');
    const boss = new PgBoss({ max: O.workers + 2, supervise: false, schedule: false });
    boss.on('error', (e) => console.error(`peer.js: pg-boss: ${e.message}`));
    await boss.start();
    await boss.createQueue(QUEUE, { retryLimit: O.workload === 'retries' ? 1 : 0, retryDelay: 0, retryBackoff: false });
    for (let w = 0; w < O.workers; w++) {
      await boss.work(QUEUE, { batchSize: 100, pollingIntervalSeconds: 0.5, includeMetadata: true }, async (jobs) => {
        const failIds = [];
        for (const j of jobs) if (!handle(j.data.seq, j.retryCount + 1)) failIds.push(j.id);
        // The rest are completed by pg-boss when this returns (complete
        // only touches active jobs, so the failed ones stay failed).
        if (failIds.length) await boss.fail(QUEUE, failIds, { message: 'planned failure' });
      });
    }
    stop = () => boss.stop({ graceful: false, wait: true });
    left = async () => Number((await check.query(
      "SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state <> 'completed'", [QUEUE])).rows[0].n);
  }

  const child = fork(__filename, [...process.argv.slice(2), '--role', 'producer'], { stdio: 'inherit' });
  const childExit = new Promise((r) => child.once('exit', r));
  await new Promise((r, j) => {
    child.once('message', r);
    child.once('exit', (c) => j(new Error(`producer exited (${c}) before it was ready`)));
  });
  const t0 = performance.now();
  let tPush = 0;
  child.on('message', (m) => { if (m.pushed) tPush = performance.now(); });
  child.send({ go: true });
  const timeout = (process.env.PEER_TIMEOUT_S ? Number(process.env.PEER_TIMEOUT_S) : 600) * 1000;
  const timer = sleep(timeout).then(() => 'timeout');
  // A producer that dies early ends the run at once, not at the timeout.
  const producerDied = childExit.then((c) => (c !== 0 ? 'the producer failed' : new Promise(() => {})));
  const r = await Promise.race([allDoneP.then(() => 'ok'), timer, producerDied]);
  // Durable: the handlers are done; wait until the database says so too.
  let n = -1;
  while (r === 'ok' && performance.now() - t0 < timeout && (n = await left()) > 0) await sleep(2);
  const tEnd = performance.now();
  await sleep(Number(process.env.PEER_DRAIN_MS || 1000)); // a job run again now is a duplicate
  const code = await childExit;
  const stillLeft = await left();
  await stop();
  await check.end();

  const wl = O.workload, secs = (tEnd - t0) / 1000;
  const out = [
    ['jobs', O.jobs], ['secs', secs.toFixed(3)], ['jobs_per_s', (O.jobs / secs).toFixed(0)],
    ['push_per_s', tPush ? (O.jobs / ((tPush - t0) / 1000)).toFixed(0) : 0],
    ['fails', fails], ['completed', distinct], ['duplicates', duplicates],
    ['missing', O.jobs - distinct], ['left_in_db', stillLeft],
  ];
  for (const [k, v] of out) console.log(`${wl}.${k} ${v}`);
  if (r !== 'ok' || n > 0) console.error(`peer.js: ${wl}: ${distinct} of ${O.jobs} jobs done (${r === 'ok' ? `${n} not completed in the database` : r === 'timeout' ? 'timed out' : r})`);
  if (code !== 0) console.error(`peer.js: the producer process exited with ${code}`);
  const ok = r === 'ok' && n === 0 && code === 0 && duplicates === 0 && foreign === 0 &&
    distinct === O.jobs && stillLeft === 0 && fails === plannedCount();
  process.exit(ok ? 0 : 1);
}

// ---- setup process ------------------------------------------------------
// The system's schema, installed before the measured run (bench/pg/run.sh
// runs this first, outside its CPU window, as it migrates Rebound's
// database before starting the nodes): a one-time cost, not a per-job one.
async function setup() {
  if (O.system === 'graphile') {
    const { makeWorkerUtils, Logger } = require('graphile-worker');
    const pgPool = pool(1);
    const utils = await makeWorkerUtils({ pgPool, logger: new Logger(logFactory) });
    await utils.migrate();
    await utils.release();
    await pgPool.end();
  } else {
    const PgBoss = require('pg-boss');
    const boss = new PgBoss({ max: 1, supervise: false, schedule: false });
    boss.on('error', (e) => console.error(`peer.js: pg-boss: ${e.message}`));
    await boss.start();
    await boss.stop({ graceful: false, wait: true });
  }
}

const roles = { producer, setup, main };
if (!roles[O.role]) throw new Error(`peer.js: --role: '${O.role}' is not producer, setup or main`);
roles[O.role]().catch((e) => {
  console.error(`peer.js: ${O.role}: ${e.stack || e}`);
  process.exit(1);
});
