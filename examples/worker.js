// A tiny worker for the README quick start, using the stock Faktory client for
// Node (npm faktory-worker), unchanged. It connects to $FAKTORY_URL (default
// tcp://127.0.0.1:7419) and runs two job types from the "default" queue:
//   hello NAME  prints a greeting and succeeds
//   flaky       always throws, so you can watch Rebound retry it and let it die
// Stop it with Ctrl-C.
"use strict";

const faktory = require("faktory-worker");

faktory.register("hello", async (name) => {
  console.log(`hello, ${name}!`);
});

let attempts = 0;
faktory.register("flaky", async () => {
  attempts++;
  console.log(`flaky: attempt ${attempts} fails at ${new Date().toISOString()}`);
  const err = new Error(`flaky failed (attempt ${attempts})`);
  err.code = "FlakyError"; // sent as the failure's errtype
  throw err;
});

faktory
  .work({ queues: ["default"], concurrency: 2 })
  .then(() => console.log(`worker running against ${process.env.FAKTORY_URL || "tcp://127.0.0.1:7419"}`))
  .catch((e) => {
    console.error(`worker: ${e.message}`);
    process.exit(1);
  });
