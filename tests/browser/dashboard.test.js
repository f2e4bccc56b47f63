// Dashboard tests in headless Chromium (Debian's, driven by playwright-core):
// every page opens and shows the server's data; actions done through the
// page (retry a dead job, pause a queue, retry from the job page, bulk
// discard) change the server's state, checked through the API. Screenshots
// go to $REBOUND_SCREENSHOTS. Run by tests/scripts/browser.sh, which starts
// the server and sets REBOUND_HTTP_URL and REBOUND_PORT.
'use strict';
const {test, before, after} = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {chromium} = require('playwright-core');
const {Client} = require('./faktory.js');

const BASE = process.env.REBOUND_HTTP_URL;
const PORT = parseInt(process.env.REBOUND_PORT, 10);
const SHOTS = process.env.REBOUND_SCREENSHOTS || path.join(__dirname, '..', 'out', 'screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
assert.ok(BASE && PORT, 'REBOUND_HTTP_URL and REBOUND_PORT must be set (tests/scripts/browser.sh does)');

let ctx, page, client, userDir;
const outside = []; // requests that tried to leave the server
const pageErrors = []; // uncaught errors in the page's scripts

async function apiGet(p) {
  const r = await fetch(BASE + '/api/' + p);
  assert.equal(r.status, 200, `GET ${p}`);
  return r.json();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 8000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await sleep(50);
  }
}

// Saves a screenshot, and checks the page shows no stray "null" or
// "undefined" (outside raw JSON blocks).
async function shot(name) {
  const text = await page.$eval('main', (m) => {
    const c = m.cloneNode(true);
    c.querySelectorAll('pre, code').forEach((p) => p.remove());
    return c.textContent;
  });
  assert.doesNotMatch(text, /\b(null|undefined|NaN)\b/, `page ${name} shows a stray value`);
  fs.mkdirSync(SHOTS, {recursive: true});
  await page.screenshot({path: path.join(SHOTS, name + '.png'), fullPage: true});
}

async function failOnce(jid, errtype, message) {
  const job = await until('job ' + jid + ' to be fetchable', async () => {
    const j = await client.fetch('work');
    if (j && j.jid !== jid) throw new Error('fetched ' + j.jid + ', expected ' + jid);
    return j;
  });
  await client.fail(job.jid, errtype, message);
}

const inHour = () => new Date(Date.now() + 3600e3).toISOString();

before(async () => {
  client = await Client.connect(PORT, 'worker-7f3a');
  for (let i = 0; i < 6; i++) await client.push({jid: `mail-00000${i}`, jobtype: 'SendReceipt', args: [1000 + i, 'user@example.com'], queue: 'mail'});
  for (let i = 0; i < 3; i++) await client.push({jid: `report-0000${i}`, jobtype: 'BuildReport', args: [{month: i + 1}], queue: 'reports'});
  for (let i = 0; i < 4; i++) await client.push({jid: `sched-0000${i}`, jobtype: 'NightlyExport', args: [i], queue: 'reports', at: inHour()});
  // retries: a long first delay keeps them there
  const slow = {dialect: 'temporal', initial_interval: '10m', maximum_attempts: 8};
  const errs = [['Timeout', 'upstream did not answer within 30s'], ['ConnectionRefused', 'connect ECONNREFUSED 10.0.0.7:5432'], ['Timeout', 'read timed out']];
  for (let i = 0; i < 3; i++) {
    await client.push({jid: `retry-0000${i}`, jobtype: 'SyncInventory', args: [i], queue: 'work', retry_policy: slow});
    await failOnce(`retry-0000${i}`, ...errs[i]);
  }
  // dead: retry -1 sends a failure straight to dead
  for (let i = 0; i < 2; i++) {
    await client.push({jid: `dead-00000${i}`, jobtype: 'ChargeCard', args: [{order: 7700 + i}], queue: 'work', retry: -1});
    await failOnce(`dead-00000${i}`, 'PaymentDeclined', 'card declined: insufficient funds');
  }
  // a job with three failed attempts for the job page (1 s apart, then an hour)
  await client.push({jid: 'flaky-000001', jobtype: 'ResizeImage', args: ['s3://bucket/cat.png', 800], queue: 'work',
    retry_policy: {max_attempts: 6, default_backoff_seconds: [1, 1, 3600], jitter_enabled: false}});
  await failOnce('flaky-000001', 'IOError', 'disk quota exceeded');
  await failOnce('flaky-000001', 'IOError', 'disk quota exceeded');
  await failOnce('flaky-000001', 'Timeout', 'resize took longer than 30s');

  userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rebound-chromium-'));
  ctx = await chromium.launchPersistentContext(userDir, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: {width: 1280, height: 820},
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  // nothing may come from anywhere but the server (no CDN, no internet)
  await ctx.route('**/*', (route) => {
    const u = route.request().url();
    if (u.startsWith(BASE) || u.startsWith('data:')) return route.continue();
    outside.push(u);
    return route.abort();
  });
  page = ctx.pages()[0] || await ctx.newPage();
  page.on('dialog', (d) => d.accept());
  page.on('pageerror', (e) => pageErrors.push(String(e)));
});

after(async () => {
  if (ctx) await ctx.close();
  if (client) client.close();
  if (userDir) fs.rmSync(userDir, {recursive: true, force: true});
});

test('overview shows live counts and the throughput chart', async () => {
  await page.goto(BASE + '/');
  await page.waitForSelector('[data-testid=card-dead] .n');
  await until('dead count on the page', async () => (await page.textContent('[data-testid=card-dead] .n')) === '2');
  assert.equal(await page.textContent('[data-testid=card-scheduled] .n'), '4');
  assert.equal(await page.textContent('[data-testid=card-retries] .n'), '4');
  assert.equal(await page.textContent('#n-dead'), '2');
  assert.ok(await page.$('svg[aria-label=throughput]'));
  assert.ok(await page.$('table[data-testid=queues] tr[data-queue=mail]'));
  await shot('overview');
});

test('pausing a queue from the queues page pauses it on the server', async () => {
  await page.goto(BASE + '/#/queues');
  const row = 'tr[data-queue=mail]';
  await page.waitForSelector(row);
  assert.equal((await page.textContent(`${row} [data-testid=queue-state]`)).trim(), 'active');
  await page.click(`${row} [data-testid=pause]`);
  await page.waitForSelector(`${row} [data-testid=resume]`);
  assert.equal((await page.textContent(`${row} [data-testid=queue-state]`)).trim(), 'paused');
  const q = (await apiGet('queues')).queues.find((x) => x.name === 'mail');
  assert.equal(q.paused, true);
  assert.equal(await client.fetch('mail'), null, 'a paused queue gives no job');
  await shot('queues');
  await page.click(`${row} [data-testid=resume]`);
  await page.waitForSelector(`${row} [data-testid=pause]`);
  assert.equal((await apiGet('queues')).queues.find((x) => x.name === 'mail').paused, false);
});

test('retrying a dead job from the dead list enqueues it', async () => {
  await page.goto(BASE + '/#/dead');
  await page.waitForSelector('table[data-testid=jobs] tr[data-jid=dead-000000]');
  assert.match(await page.textContent('[data-testid=total]'), /^2 job\(s\)/);
  assert.match(await page.textContent('tr[data-jid=dead-000000]'), /PaymentDeclined/);
  await shot('dead');
  await page.check('input[data-jid=dead-000000]');
  assert.equal(await page.textContent('[data-testid=selected]'), '1 selected');
  await page.click('[data-testid=bulk-retry]');
  await page.waitForSelector('tr[data-jid=dead-000000]', {state: 'detached'});
  assert.match(await page.textContent('[data-testid=total]'), /^1 job\(s\)/);
  const job = await apiGet('job/dead-000000');
  assert.equal(job.state, 'enqueued');
});

test('the retries list filters by error type and bulk-discards', async () => {
  await page.goto(BASE + '/#/retries?errtype=Timeout');
  await page.waitForSelector('table[data-testid=jobs]');
  const jids = await page.$$eval('table[data-testid=jobs] tbody tr', (rows) => rows.map((r) => r.dataset.jid).sort());
  assert.deepEqual(jids, ['flaky-000001', 'retry-00000', 'retry-00002']); // not retry-00001 (ConnectionRefused)
  await shot('retries');
  await page.check('input[data-jid=retry-00002]');
  await page.click('[data-testid=bulk-discard]');
  await page.waitForSelector('tr[data-jid=retry-00002]', {state: 'detached'});
  const r = await fetch(BASE + '/api/job/retry-00002');
  assert.equal(r.status, 404);
});

test('the job page shows attempts on a timeline and retries the job', async () => {
  await page.goto(BASE + '/#/job/flaky-000001');
  await page.waitForSelector('[data-testid=timeline]');
  assert.equal(await page.textContent('[data-testid=job-state]'), 'retries');
  const attempts = await page.$$eval('[data-testid=attempts] li', (li) => li.map((x) => x.textContent));
  assert.equal(attempts.length, 3);
  assert.match(attempts[0], /Attempt 3 Timeout/);
  assert.match(attempts[2], /disk quota exceeded/);
  assert.equal(await page.$$eval('[data-testid=timeline] circle', (c) => c.length), 5); // start, 3 failures, next
  assert.ok(await page.$('[data-testid=schedule-chart] rect'));
  await shot('job');
  await page.click('[data-testid=job-retry]');
  await until('state enqueued on the page', async () =>
    (await page.textContent('[data-testid=job-state]').catch(() => '')) === 'enqueued');
  assert.equal((await apiGet('job/flaky-000001')).state, 'enqueued');
});

test('the scheduled list shows future jobs', async () => {
  await page.goto(BASE + '/#/scheduled');
  await page.waitForSelector('table[data-testid=jobs] tr[data-jid=sched-00003]');
  assert.match(await page.textContent('tr[data-jid=sched-00003]'), /NightlyExport/);
  assert.match(await page.textContent('tr[data-jid=sched-00003]'), /in (59m|1h)/);
  await shot('scheduled');
});

test('the policy simulator charts a schedule in any dialect', async () => {
  await page.goto(BASE + '/#/simulate');
  await page.waitForSelector('[data-testid=sim-final]'); // the preset ran
  await page.fill('[data-testid=policy]', 'ftl:10 5s 1m');
  await page.click('[data-testid=simulate]');
  await until('the FTL schedule', async () => (await page.textContent('[data-testid=sim-executions]')) === '11');
  assert.equal(await page.textContent('[data-testid=sim-final]'), 'dead');
  assert.equal(await page.$$eval('[data-testid=schedule-chart] rect', (r) => r.length), 10);
  const rows = await page.$$eval('[data-testid=schedule-table] tbody tr', (r) => r.map((x) => x.children[2].textContent));
  assert.deepEqual(rows.slice(0, 5), ['5s', '10s', '20s', '40s', '1m']);
  await shot('simulator');
  await page.fill('[data-testid=policy]', '{"dialect": "temporal", "backoff_coefficient": 0.5}');
  await page.click('[data-testid=simulate]');
  await page.waitForSelector('[data-testid=sim-error]');
  assert.match(await page.textContent('[data-testid=sim-error]'), /invalid policy/);
});

test('the workers page lists connected workers', async () => {
  await page.goto(BASE + '/#/workers');
  await page.waitForSelector('table[data-testid=workers]');
  assert.match(await page.textContent('table[data-testid=workers]'), /worker-7f3a/);
  await shot('workers');
});

test('an unknown job shows the API error', async () => {
  await page.goto(BASE + '/#/job/no-such-job');
  await page.waitForSelector('[data-testid=job-error]');
  assert.match(await page.textContent('[data-testid=job-error]'), /no job 'no-such-job'/);
});

test('the dashboard loads nothing from outside the server and raises no script error', async () => {
  assert.deepEqual(outside, []);
  assert.deepEqual(pageErrors, []);
});
