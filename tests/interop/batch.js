// Interop test of batches with the stock npm client faktory-worker, unchanged.
// It has no batch API, so BATCH goes through its generic send() (as any Node
// user would) and jobs join the batch by `custom.bid` (docs/workflows.md,
// "Batches"). Started by tests/scripts/interop.sh with FAKTORY_URL set.
//
// Checks: BATCH NEW answers a bid; members pushed with custom.bid count in
// BATCH STATUS; nothing fires before COMMIT; after the members run, the
// complete callback runs once, then the success callback once, carrying
// custom._bid and never custom.bid; STATUS ends with "2" for both; an unknown
// bid is refused with the error the clients expect.
"use strict";

const faktory = require("faktory-worker");
const tap = require("./tap");
const { check, sleep } = tap;
const DEADLINE_MS = 60000;
const until = (what, fn) => tap.until(what, fn, DEADLINE_MS);

const N = 20; // members

async function status(client, bid) {
  return JSON.parse(await client.send(["BATCH", "STATUS", bid]));
}

async function main() {
  if (!process.env.FAKTORY_URL) throw new Error("FAKTORY_URL is not set");
  const client = await faktory.connect();
  await client.flush();
  const tag = Date.now().toString(36);

  const cb = (type) => ({ jid: `cb-${type}-${tag}`, jobtype: type, args: [], queue: "batch" });
  const bid = await client.send([
    "BATCH", "NEW",
    JSON.stringify({ description: "node interop", complete: cb("done"), success: cb("won") }),
  ]);
  check(typeof bid === "string" && /^b-/.test(bid), `BATCH NEW answers a bid (${bid})`);

  for (let i = 0; i < N; i++) {
    const j = client.job("member", i);
    j.queue = "batch";
    j.custom = { bid };
    await j.push();
  }
  let st = await status(client, bid);
  check(st.total === N && st.pending === N && st.complete_st === "" && st.success_st === "",
        `STATUS counts ${N} pending members before COMMIT (${JSON.stringify(st)})`);
  check(st.parent_bid === null || st.parent_bid === undefined, "a top-level batch has no parent_bid");

  const ran = [];
  const callbacks = [];
  faktory.register("member", async (i) => {
    ran.push(i);
  });
  for (const type of ["done", "won"]) {
    // a function returned by the job function gets the context, job included
    faktory.register(type, () => async (ctx) => {
      callbacks.push({ type, custom: ctx.job.custom || {} });
    });
  }
  const worker = await faktory.work({ queues: ["batch"], concurrency: 4 });
  await until("every member to run", () => ran.length === N);
  await sleep(300);
  check(callbacks.length === 0, "no callback before COMMIT");
  st = await status(client, bid);
  check(st.pending === 0 && st.complete_st === "", `all ACKed, still uncommitted (${JSON.stringify(st)})`);

  check((await client.send(["BATCH", "COMMIT", bid])) === "OK", "BATCH COMMIT answers OK");
  await until("both callbacks", () => callbacks.length >= 2);
  await sleep(300);
  await worker.stop();
  check(callbacks.length === 2, `each callback ran once (${callbacks.map((c) => c.type).join(",")})`);
  check(callbacks[0].type === "done" && callbacks[1].type === "won", "complete before success");
  check(callbacks.every((c) => c.custom._bid === bid && c.custom.bid === undefined),
        `callbacks carry custom._bid, not custom.bid (${JSON.stringify(callbacks.map((c) => c.custom))})`);
  st = await status(client, bid);
  check(st.complete_st === "2" && st.success_st === "2", `STATUS ends with "2" and "2" (${JSON.stringify(st)})`);

  let err = null;
  try {
    await client.send(["BATCH", "OPEN", `b-nosuch${tag}`]);
  } catch (e) {
    err = e;
  }
  check(err && /No such batch/.test(String(err.message || err)), `an unknown bid is refused (${err && (err.message || err)})`);
  await client.close();
}

tap.run("batch interop", main, DEADLINE_MS * 2);
