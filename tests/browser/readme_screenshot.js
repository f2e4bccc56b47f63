// Makes the README's dashboard screenshot ($DASHBOARD_PNG): seeds a fresh
// server with a few queues, retries and dead jobs, runs a worker for about
// 15 seconds so the throughput chart has a shape, then captures the
// overview. Run by tests/scripts/browser.sh when DASHBOARD_PNG is set.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {chromium} = require('playwright-core');
const {Client} = require('./faktory.js');

const BASE = process.env.REBOUND_HTTP_URL;
const PORT = parseInt(process.env.REBOUND_PORT, 10);
const OUT = process.env.DASHBOARD_PNG;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const c = await Client.connect(PORT, 'worker-1a2b');
  const w = await Client.connect(PORT, 'worker-9c8d');
  let n = 0;
  const push = (queue, jobtype, extra) => c.push(Object.assign({jid: 'job-' + String(++n).padStart(8, '0'), jobtype, queue, args: [n]}, extra || {}));
  const later = new Date(Date.now() + 2 * 3600e3).toISOString();
  for (let i = 0; i < 12; i++) await push('reports', 'NightlyExport', {at: later});
  // a steady trickle: pushes, successes and some failures, second by second
  const errors = [['Timeout', 'upstream did not answer within 30s'], ['ConnectionRefused', 'connect ECONNREFUSED 10.0.0.7:5432'], ['PaymentDeclined', 'card declined']];
  for (let sec = 0; sec < 16; sec++) {
    const t0 = Date.now();
    const burst = 8 + Math.round(6 * Math.sin(sec / 2.5) + 6);
    for (let i = 0; i < burst; i++) await push(i % 3 ? 'default' : 'mail', i % 3 ? 'SyncInventory' : 'SendReceipt',
      i % 7 === 0 ? {retry_policy: {dialect: 'temporal', initial_interval: '15m', maximum_attempts: 5}} : i % 11 === 0 ? {retry: -1} : {});
    for (let i = 0; i < burst - 2; i++) {
      const j = await w.fetch('default', 'mail');
      if (!j) break;
      if (j.retry_policy || j.retry === -1) await w.fail(j.jid, ...errors[(sec + i) % 3]);
      else await w.ack(j.jid);
    }
    await sleep(Math.max(0, 1000 - (Date.now() - t0)));
  }
  for (let i = 0; i < 40; i++) await push('mail', 'SendReceipt');
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rebound-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
    viewport: {width: 1280, height: 860}, deviceScaleFactor: 1,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = ctx.pages()[0] || await ctx.newPage();
  await page.goto(BASE + '/');
  await page.waitForSelector('svg[aria-label=throughput] path');
  await sleep(500);
  await page.screenshot({path: OUT});
  await ctx.close();
  fs.rmSync(userDir, {recursive: true, force: true});
  c.close();
  w.close();
  console.log('wrote ' + OUT);
}

main().catch((e) => { console.error(e); process.exit(1); });
