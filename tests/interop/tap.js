// What the interop scripts share: TAP-style checks ("ok - ..." / "not ok -
// ..."), polling with a deadline, and running main() under an overall timer
// that prints the tally and sets the exit status.
"use strict";

let passed = 0;
let failed = 0;

function check(ok, what) {
  if (ok) passed++;
  else failed++;
  console.log(`${ok ? "ok" : "not ok"} - ${what}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls fn() until it returns a truthy value (returned); throws after
// deadlineMs.
async function until(what, fn, deadlineMs) {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - start > deadlineMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

// Runs main(); prints "NAME: P passed, F failed" and exits 0 only when
// nothing failed, threw, or outlasted timeoutMs.
function run(name, main, timeoutMs) {
  const timer = setTimeout(() => {
    console.log(`not ok - ${name} did not finish in time`);
    process.exit(1);
  }, timeoutMs);
  main()
    .catch((e) => {
      failed++;
      console.log(`not ok - ${e && e.stack ? e.stack : e}`);
    })
    .then(() => {
      clearTimeout(timer);
      console.log(`${name}: ${passed} passed, ${failed} failed`);
      process.exit(failed ? 1 : 0);
    });
}

module.exports = { check, sleep, until, run };
