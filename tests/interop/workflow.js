// Interop test of workflows: the stock npm client faktory-worker, unchanged,
// sends job dependencies the way any client can, in `custom.depends_on`
// (docs/workflows.md), and runs them as an ordinary worker. Started by
// tests/scripts/interop.sh with FAKTORY_URL set.
//
// Checks: a diamond A -> (B, C) -> D pushed in one PUSHB runs in dependency
// order with B failing once and retrying; D is `waiting` (JOB) until both B and
// C are ACKed; a push naming an unknown parent is refused and changes nothing.
"use strict";

const faktory = require("faktory-worker");
const tap = require("./tap");
const { check } = tap;
const until = (what, fn) => tap.until(what, fn, DEADLINE_MS);

const DEADLINE_MS = 60000;

// JOB is Rebound's (the stock client has no method for it): its JSON, or null.
async function jobState(client, jid) {
  const r = await client.send(["JOB", JSON.stringify({ jid })]);
  return r ? JSON.parse(r).state : null;
}

async function main() {
  if (!process.env.FAKTORY_URL) throw new Error("FAKTORY_URL is not set");
  const client = await faktory.connect();
  await client.flush();
  const tag = Date.now().toString(36);
  const jid = (n) => `wf-${tag}-${n}`;

  // --- a diamond in one PUSHB ------------------------------------------------
  const mk = (name, parents) => {
    const j = client.job("step", name);
    j.jid = jid(name);
    j.queue = "wf";
    if (parents.length) j.custom = { depends_on: parents.map(jid) };
    return j;
  };
  const rejected = await client.pushBulk([
    mk("a", []), mk("b", ["a"]), mk("c", ["a"]), mk("d", ["b", "c"]),
  ]);
  check(Object.keys(rejected).length === 0, "PUSHB of the diamond accepted");
  check((await jobState(client, jid("d"))) === "waiting", "D waits before anything ran");

  // --- a push naming an unknown parent is refused ----------------------------
  const orphan = client.job("step", "orphan");
  orphan.jid = jid("orphan");
  orphan.custom = { depends_on: [jid("nobody")] };
  let err = null;
  try {
    await orphan.push();
  } catch (e) {
    err = e;
  }
  check(err && /depends_on: unknown job/.test(String(err.message || err)),
        `a push naming an unknown parent is refused (${err && (err.message || err)})`);
  check((await jobState(client, jid("orphan"))) === null, "the refused job does not exist");

  // --- run it: B fails once ---------------------------------------------------
  const order = [];
  let bFailures = 0;
  let dWaitingWhileCRan = null;
  faktory.register("step", async (name) => {
    if (name === "b" && bFailures === 0) {
      bFailures++;
      throw new Error("b fails once");
    }
    if (name === "c") dWaitingWhileCRan = await jobState(client, jid("d"));
    order.push(name);
  });
  const worker = await faktory.work({ queues: ["wf"], concurrency: 2 });
  await until("D to run", () => order.includes("d"));
  await worker.stop();

  const pos = (n) => order.indexOf(n);
  check(pos("a") === 0, `A ran first (order ${order.join(",")})`);
  check(pos("b") > pos("a") && pos("c") > pos("a"), "B and C ran after A");
  check(pos("d") === order.length - 1 && pos("d") > pos("b") && pos("d") > pos("c"),
        "D ran last, after B and C");
  check(bFailures === 1 && pos("b") >= 0, "B failed once and succeeded on its retry");
  check(dWaitingWhileCRan === "waiting", `D was waiting while C ran (got ${dWaitingWhileCRan})`);
  check(order.length === 4, `each step succeeded once (order ${order.join(",")})`);
  await client.close();
}

tap.run("workflow interop", main, DEADLINE_MS * 2);
