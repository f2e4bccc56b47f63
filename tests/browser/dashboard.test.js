// Dashboard tests in headless Chromium (Debian's, driven by playwright-core):
// every page opens and shows the server's data; actions done through the
// page (retry a dead job, pause a queue, retry from the job page, bulk
// discard) change the server's state, checked through the API; the workflow
// page draws a job's dependency graph (issue 15); the job
// page's attempt timeline stays legible (no label overlaps another or
// leaves the chart) for 1 to 120 attempts however close in time; the Cron
// and Throttles pages and a unique job's lock show the server's data
// (issue 16); the Groups page lists a queue's groups and sets, pauses and
// resumes them, and a held job's page says why (issue 30); a page on another origin, served here, tries a form post and
// no-cors fetches against the dashboard (cross-site, then same-site) and
// fails, cannot frame it, and a name resolving to the server is refused;
// the dashboard raises no Content-Security-Policy violation (issue 26).
// Screenshots go to $REBOUND_SCREENSHOTS. Run by tests/scripts/browser.sh,
// which starts the server and sets REBOUND_HTTP_URL, REBOUND_PORT and
// REBOUND_LOG (the server's log).
'use strict';
const {test, before, after} = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
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
const cspViolations = []; // Content-Security-Policy reports in the dashboard's page
const allowed = [BASE, 'data:']; // where requests may go (the attack test adds its origins)
// a name the browser resolves to the server, as after DNS rebinding
const REBOUND_NAME = 'rebound-rebind.test';

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
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--host-resolver-rules=MAP ${REBOUND_NAME} 127.0.0.1`],
  });
  // nothing may come from anywhere but the server (no CDN, no internet)
  await ctx.route('**/*', (route) => {
    const u = route.request().url();
    if (allowed.some((a) => u.startsWith(a))) return route.continue();
    outside.push(u);
    return route.abort();
  });
  page = ctx.pages()[0] || await ctx.newPage();
  page.on('dialog', (d) => d.accept());
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  // every Content-Security-Policy violation in the dashboard's page: the
  // browser's own console message and the page's report event
  await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) =>
    console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || 'inline'} at ${e.sourceFile}:${e.lineNumber}`)));
  page.on('console', (m) => {
    if (/Content Security Policy|CSP violation/.test(m.text())) cspViolations.push(m.text());
  });
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
  // the header shows Rebound's version; the protocol's is labelled as such
  const info = await apiGet('info');
  await until('the version in the header', async () => (await page.textContent('#version')) === 'v' + info.server.version);
  assert.match(await page.getAttribute('#version', 'title'), new RegExp(`work protocol of Faktory ${info.server.faktory_protocol_version.replace(/\./g, '\\.')}$`));
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
  // the three failures, 1 s apart on an hour-long axis, share one marker
  assert.deepEqual(await page.$$eval('[data-testid=timeline] .mk-label', (t) => t.map((x) => x.textContent)), ['#1–#3']);
  assert.ok(await page.$('[data-testid=schedule-chart] rect'));
  await shot('job');
  await page.click('[data-testid=job-retry]');
  await until('state enqueued on the page', async () =>
    (await page.textContent('[data-testid=job-state]').catch(() => '')) === 'enqueued');
  assert.equal((await apiGet('job/flaky-000001')).state, 'enqueued');
});

// The timeline's attempt labels and markers as laid out on the page
// (client boxes), with the SVG's box and the viewport's size.
async function timelineBoxes() {
  return page.$eval('[data-testid=timeline]', (svg) => {
    svg.scrollIntoView({block: 'center'});
    const box = (e) => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
    return {
      svg: box(svg), vw: window.innerWidth, vh: window.innerHeight,
      labels: [...svg.querySelectorAll('.mk-label')].map((e) => ({...box(e), text: e.textContent, first: +e.dataset.first, last: +e.dataset.last})),
      marks: [...svg.querySelectorAll('.mk')].map((e) => box(e)),
    };
  });
}

const overlap = (a, b) => a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b;

// Labels never overlap each other and lie inside the chart and the window;
// markers never overlap; the labels name every attempt 1..n once, in order.
function assertLegible(lay, n, what) {
  const inside = (x, o) => x.l >= o.l && x.r <= o.r && x.t >= o.t && x.b <= o.b;
  const screen = {l: 0, t: 0, r: lay.vw, b: lay.vh};
  lay.labels.forEach((a, i) => {
    assert.ok(a.r > a.l && a.b > a.t, `${what}: label ${a.text} has no size`);
    assert.ok(inside(a, lay.svg), `${what}: label ${a.text} ${JSON.stringify(a)} leaves the chart ${JSON.stringify(lay.svg)}`);
    assert.ok(inside(a, screen), `${what}: label ${a.text} is off screen`);
    lay.labels.slice(i + 1).forEach((b) => assert.ok(!overlap(a, b), `${what}: labels ${a.text} and ${b.text} overlap`));
  });
  lay.marks.forEach((a, i) => lay.marks.slice(i + 1).forEach((b) =>
    assert.ok(!overlap(a, b), `${what}: markers ${JSON.stringify(a)} and ${JSON.stringify(b)} overlap`)));
  let next = 1;
  for (const a of lay.labels.slice().sort((x, y) => x.first - y.first)) {
    assert.equal(a.first, next, `${what}: labels skip or repeat attempt ${next}: ${lay.labels.map((x) => x.text)}`);
    assert.ok(a.last >= a.first);
    next = a.last + 1;
  }
  assert.equal(next, n + 1, `${what}: labels end at attempt ${next - 1}, not ${n}`);
}

test('the job page keeps attempt markers legible for 1, 5 and 50 attempts close in time', async () => {
  // each failure is requeued at once (MUTATE), so the attempts land within
  // milliseconds of each other while the next one is an hour away
  const slow = {dialect: 'temporal', initial_interval: '1h', backoff_coefficient: 1.0, maximum_attempts: 100};
  for (const n of [1, 5, 50]) {
    const jid = `burst-${String(n).padStart(6, '0')}`;
    await client.push({jid, jobtype: 'CallWebhook', args: [n], queue: 'burst', retry_policy: slow});
    for (let i = 0; i < n; i++) {
      const job = await client.fetch('burst');
      assert.equal(job && job.jid, jid);
      await client.fail(jid, i % 2 ? 'Timeout' : 'HTTP503', `attempt ${i + 1} failed`);
      if (i < n - 1) await client.cmd('MUTATE ' + JSON.stringify({cmd: 'requeue', target: 'retries', filter: {jids: [jid]}}));
    }
    await page.goto(BASE + '/#/job/' + jid);
    await page.waitForSelector('[data-testid=timeline] .mk-label');
    assert.equal((await page.$$('[data-testid=attempts] li')).length, n);
    assertLegible(await timelineBoxes(), n, `job with ${n} attempts`);
    fs.mkdirSync(SHOTS, {recursive: true});
    await (await page.$('[data-testid=timeline]')).screenshot({path: path.join(SHOTS, `timeline-${n}.png`)});
    await page.evaluate(() => window.scrollTo(0, 0));
    await shot(`job-${n}-attempts`);
  }
});

test('attempt markers stay legible however the attempts are spaced', async () => {
  // the page's own timeline() on made-up histories: bursts, even spacing,
  // doubling delays and random gaps, 1 to 120 attempts
  await page.goto(BASE + '/#/workers');
  await page.waitForSelector('main h1');
  const cases = [];
  for (const n of [1, 2, 3, 5, 8, 13, 21, 50, 120]) {
    for (const kind of ['burst', 'even', 'doubling', 'random']) cases.push({n, kind});
  }
  for (const c of cases) {
    await page.evaluate(({n, kind}) => {
      let seed = n * 7919 + kind.length;
      const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
      const t0 = Date.now() - 3600e3;
      let t = t0;
      const history = [];
      for (let i = 1; i <= n; i++) {
        t += kind === 'burst' ? 3 : kind === 'even' ? 3600e3 / n : kind === 'doubling' ? 1000 * Math.pow(2, Math.min(i, 12)) : rnd() * rnd() * 600e3;
        history.push({attempt: i, at: new Date(t).toISOString(), outcome: i === n && n % 2 ? 'dead' : 'retry', errtype: 'E', delay_ms: 1000});
      }
      const job = {state: n % 2 ? 'dead' : 'retries', created_at: new Date(t0).toISOString(), history,
        next_at: n % 2 ? null : new Date(Date.now() + 600e3).toISOString()};
      document.getElementById('main').replaceChildren(timeline(job));
    }, c);
    assertLegible(await timelineBoxes(), c.n, `${c.n} attempts, ${c.kind}`);
    if (c.n === 21 || c.n === 120) {
      fs.mkdirSync(SHOTS, {recursive: true});
      await (await page.$('[data-testid=timeline]')).screenshot({path: path.join(SHOTS, `timeline-made-up-${c.n}-${c.kind}.png`)});
    }
  }
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

// The chart's tick labels, its scale note's box and the "table" toggle's box.
async function scheduleAxis() {
  return page.$eval('[data-testid=schedule-chart]', (svg) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
    const summary = svg.closest('.panel').querySelector('details summary');
    return {ticks: [...svg.querySelectorAll('text.tick')].map((t) => t.textContent), tickBoxes: [...svg.querySelectorAll('text.tick')].map(box),
      note: svg.querySelector('[data-testid=schedule-scale]').textContent, noteBox: box(svg.querySelector('[data-testid=schedule-scale]')),
      svg: box(svg), summary: summary ? box(summary) : null};
  });
}

test('the schedule chart has round ticks and its scale note clear of the table toggle', async () => {
  await page.goto(BASE + '/#/workers'); // the simulator page afresh (it keeps the last policy)
  await page.waitForSelector('main h1');
  await page.goto(BASE + '/#/simulate');
  await page.waitForSelector('[data-testid=policy]');
  // delays 1s, 2s, 4s: linear, ticks every second (not 1.3s, 2.5s, 3.8s)
  await page.fill('[data-testid=policy]', 'ftl:3 1s 5s');
  await page.click('[data-testid=simulate]');
  await until('the FTL schedule', async () => (await page.textContent('[data-testid=sim-executions]')) === '4');
  let a = await scheduleAxis();
  assert.deepEqual(a.ticks, ['0', '1s', '2s', '3s', '4s']);
  assert.equal(a.note, 'delay before the next attempt');
  // a minute's delays: 0, 15s, 30s, 45s, 1m
  await page.fill('[data-testid=policy]', 'ftl:3 15s 1m');
  await page.click('[data-testid=simulate]');
  await until('the second schedule', async () => (await scheduleAxis()).ticks.join(',') === '0,15s,30s,45s,1m');
  // Sidekiq's backoff spans seconds to days: a log scale on round marks
  await page.fill('[data-testid=policy]', 'faktory:25');
  await page.click('[data-testid=simulate]');
  await until('the log schedule', async () => (await scheduleAxis()).note.endsWith('(log scale)'));
  a = await scheduleAxis();
  assert.ok(a.ticks.length >= 5, a.ticks.join(','));
  for (const t of a.ticks) assert.match(t, /^(1ms|10ms|100ms|1s|10s|1m|10m|1h|6h|1d|7d|30d|365d)$/, `log tick ${t}`);
  assert.equal(a.note, 'delay before the next attempt (log scale)');
  const overlap = (p, q) => p.l < q.r && q.l < p.r && p.t < q.b && q.t < p.b;
  for (const tb of a.tickBoxes) assert.ok(!overlap(tb, a.noteBox), 'the scale note crowds a tick');
  assert.ok(a.noteBox.b <= a.tickBoxes.reduce((m, b) => Math.min(m, b.t), Infinity), 'the scale note is above the axis');
  await shot('simulator-log-scale');
  // on a job page the note stays clear of the "table" toggle under the chart
  await page.goto(BASE + '/#/job/retry-00001');
  await page.waitForSelector('[data-testid=schedule-chart] text.tick');
  a = await scheduleAxis();
  assert.ok(a.summary, 'the table toggle');
  assert.ok(a.noteBox.b + 8 <= a.summary.t, `the scale note ${JSON.stringify(a.noteBox)} crowds the table toggle ${JSON.stringify(a.summary)}`);
  assert.ok(a.noteBox.t >= a.svg.t, 'the scale note inside the chart');
});

test('the job page labels the lease end and the next attempt on its timeline', async () => {
  await client.push({jid: 'lease-000001', jobtype: 'RenderVideo', args: [], queue: 'lease', reserve_for: 600});
  const j = await client.fetch('lease');
  assert.equal(j && j.jid, 'lease-000001');
  const labels = async () => page.$eval('[data-testid=timeline]', (svg) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom, text: e.firstChild.textContent}; };
    return {svg: box(svg), ends: [...svg.querySelectorAll('text.end-label')].map(box), now: box(svg.querySelector('text.now-label'))};
  });
  const overlap = (p, q) => p.l < q.r && q.l < p.r && p.t < q.b && q.t < p.b;
  const inside = (x, o) => x.l >= o.l && x.r <= o.r && x.t >= o.t && x.b <= o.b;
  await page.goto(BASE + '/#/job/lease-000001');
  await page.waitForSelector('[data-testid=timeline] text.end-label');
  let l = await labels();
  assert.deepEqual(l.ends.map((e) => e.text), ['lease ends']);
  for (const e of [...l.ends, l.now]) assert.ok(inside(e, l.svg), `${e.text} leaves the timeline`);
  assert.ok(!overlap(l.ends[0], l.now), 'the lease end label crowds "now"');
  await (await page.$('[data-testid=timeline]')).screenshot({path: path.join(SHOTS, 'timeline-lease.png')});
  await shot('job-working');
  await client.ack('lease-000001');
  // a job waiting for its retry: "next attempt"
  await page.goto(BASE + '/#/job/retry-00001');
  await page.waitForSelector('[data-testid=timeline] text.end-label');
  l = await labels();
  assert.deepEqual(l.ends.map((e) => e.text), ['next attempt']);
  assert.ok(!overlap(l.ends[0], l.now));
  await (await page.$('[data-testid=timeline]')).screenshot({path: path.join(SHOTS, 'timeline-next-attempt.png')});
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

test('the workflow page draws a diamond blocked by a dead parent', async () => {
  // A -> B, C -> D; A succeeds, B dies (retry -1): D is blocked by B
  const dep = (jid, jobtype, parents, extra) => ({jid, jobtype, args: [], queue: 'wfq', custom: {depends_on: parents}, ...extra});
  await client.cmd('PUSHB ' + JSON.stringify([
    {jid: 'wfdia-A000', jobtype: 'Extract', args: [], queue: 'wfq'},
    dep('wfdia-B000', 'Transform', ['wfdia-A000'], {retry: -1}),
    dep('wfdia-C000', 'Enrich', ['wfdia-A000']),
    dep('wfdia-D000', 'Load', ['wfdia-B000', 'wfdia-C000']),
  ]));
  const a = await client.fetch('wfq');
  assert.equal(a && a.jid, 'wfdia-A000');
  await client.ack('wfdia-A000');
  const b = await client.fetch('wfq');
  assert.equal(b && b.jid, 'wfdia-B000');
  await client.fail('wfdia-B000', 'SchemaError', 'column "total" missing');
  assert.equal((await apiGet('job/wfdia-D000')).state, 'blocked');

  // the job page links to the workflow (a job with parents); a plain job's does not
  await page.goto(BASE + '/#/job/mail-000001');
  await page.waitForSelector('[data-testid=job-state]');
  await sleep(300);
  assert.equal(await page.isVisible('[data-testid=job-workflow]'), false, 'a plain job has no workflow link');
  await page.goto(BASE + '/#/job/wfdia-B000'); // depends_on A
  await page.waitForSelector('[data-testid=job-workflow]:not([hidden])');
  await page.goto(BASE + '/#/job/wfdia-D000');
  await page.waitForSelector('[data-testid=job-workflow]:not([hidden])');
  assert.equal(await page.textContent('[data-testid=job-state]'), 'blocked');
  assert.equal(await page.textContent('[data-testid=job-waits-for]'), 'wfdia-B000, wfdia-C000');
  assert.match(await page.textContent('[data-testid=job-blocked-by]'), /^wfdia-B000/);
  await shot('job-in-workflow');
  await page.click('[data-testid=job-workflow]');
  await page.waitForSelector('[data-testid=workflow-graph] .wf-node');
  assert.equal(new URL(page.url()).hash, '#/workflow/wfdia-D000');

  const nodes = await page.$$eval('[data-testid=workflow-graph] g.wf-node', (gs) => gs.map((g) => ({
    jid: g.dataset.jid, state: g.dataset.state, cls: g.getAttribute('class'),
    fill: g.querySelector('rect').getAttribute('fill'),
    link: (g.querySelector('a') || {getAttribute: () => null}).getAttribute('href'),
    x: +g.querySelector('rect').getAttribute('x'), y: +g.querySelector('rect').getAttribute('y')})));
  assert.deepEqual(nodes.map((n) => [n.jid, n.state]), [
    ['wfdia-A000', 'succeeded'], ['wfdia-B000', 'dead'], ['wfdia-C000', 'enqueued'], ['wfdia-D000', 'blocked']]);
  const by = Object.fromEntries(nodes.map((n) => [n.jid, n]));
  // colours by state, as the legend says
  const legendColors = await page.$$eval('.legend:not([data-testid=wf-outlines]) span', (sp) => Object.fromEntries(sp.map((x) => [x.textContent, x.querySelector('i').style.background])));
  for (const n of nodes) {
    assert.ok(legendColors[n.state], `legend has ${n.state}`);
    assert.match(n.cls, new RegExp(`\\bstate-${n.state}\\b`));
  }
  assert.equal(by['wfdia-B000'].fill, '#d33b3b');
  assert.equal(by['wfdia-A000'].fill, '#1f9d55');
  assert.notEqual(by['wfdia-C000'].fill, by['wfdia-D000'].fill);
  // the blocking dead parent is highlighted, and only it
  assert.deepEqual(nodes.filter((n) => /\bwf-blocking\b/.test(n.cls)).map((n) => n.jid), ['wfdia-B000']);
  assert.match(await page.textContent('[data-testid=workflow-blocking]'), /wfdia-B000/);
  // layers left to right: A, then B and C, then D
  assert.ok(by['wfdia-A000'].x < by['wfdia-B000'].x && by['wfdia-B000'].x === by['wfdia-C000'].x && by['wfdia-C000'].x < by['wfdia-D000'].x);
  assert.notEqual(by['wfdia-B000'].y, by['wfdia-C000'].y);
  // stored jobs link to their job pages; the succeeded A has no page left
  assert.equal(by['wfdia-D000'].link, '#/job/wfdia-D000');
  assert.equal(by['wfdia-B000'].link, '#/job/wfdia-B000');
  assert.equal(by['wfdia-A000'].link, null);
  const edges = await page.$$eval('[data-testid=workflow-graph] path.wf-edge', (ps) => ps.map((p) => p.dataset.parent + '>' + p.dataset.child).sort());
  assert.deepEqual(edges, ['wfdia-A000>wfdia-B000', 'wfdia-A000>wfdia-C000', 'wfdia-B000>wfdia-D000', 'wfdia-C000>wfdia-D000']);
  await shot('workflow');

  // a node is a link to its job page
  await page.click('[data-testid=workflow-graph] g.wf-node[data-jid=wfdia-B000] a');
  await page.waitForSelector('[data-testid=job-state]');
  assert.equal(await page.textContent('[data-testid=job-state]'), 'dead');
  await page.goto(BASE + '/#/workflow/no-such-job');
  await page.waitForSelector('[data-testid=workflow-error]');
  assert.match(await page.textContent('[data-testid=workflow-error]'), /no job 'no-such-job'/);
});

test('waiting and blocked jobs have overview cards, a nav entry and lists of their own', async () => {
  // the diamond above: wfdia-D000 is blocked by wfdia-B000; one more waits for wfdia-C000
  await client.push({jid: 'held-wait-01', jobtype: 'PublishReport', args: [{month: 11}], queue: 'wfq',
    custom: {depends_on: ['wfdia-C000']}});
  const info = await apiGet('info');
  assert.deepEqual([info.jobs.waiting, info.jobs.blocked], [1, 1]);
  await page.goto(BASE + '/');
  await until('the held cards', async () => (await page.$('[data-testid=card-blocked] .n')) &&
    (await page.textContent('[data-testid=card-waiting] .n')) === '1' &&
    (await page.textContent('[data-testid=card-blocked] .n')) === '1');
  await until('the nav badge', async () => (await page.textContent('#n-held')) === '2');
  assert.match(await page.getAttribute('#n-held', 'class'), /\bblocked\b/);
  await shot('overview-held');
  await page.click('[data-testid=card-blocked]');
  await page.waitForSelector('table[data-testid=jobs] tr[data-jid=wfdia-D000]');
  assert.equal(new URL(page.url()).hash, '#/blocked');
  assert.equal(await page.getAttribute('#nav a.active', 'data-page'), 'waiting');
  assert.equal(await page.textContent('tr[data-jid=wfdia-D000] [data-testid=blocked-by]'), 'wfdia-B000');
  assert.equal(await page.textContent('tr[data-jid=wfdia-D000] [data-testid=waits-for]'), 'wfdia-B000, wfdia-C000');
  assert.match(await page.textContent('[data-testid=total]'), /^1 job\(s\)/);
  assert.equal(await page.$('[data-testid=bulk-retry]'), null, 'held jobs follow their parents: no bulk actions');
  await until('the tabs\' counts', async () => (await page.textContent('#tab-waiting')) === '1');
  await shot('blocked-list');
  await page.click('[data-testid=held-tabs] a[data-state=waiting]');
  await page.waitForSelector('table[data-testid=jobs] tr[data-jid=held-wait-01]');
  assert.equal(await page.textContent('tr[data-jid=held-wait-01] [data-testid=waits-for]'), 'wfdia-C000');
  assert.equal(await page.$('tr[data-jid=held-wait-01] [data-testid=blocked-by]'), null);
  await shot('waiting-list');
  // a row leads to the job's workflow
  await page.click('tr[data-jid=held-wait-01] a.wf-link');
  await page.waitForSelector('[data-testid=workflow-graph] g.wf-node[data-jid=held-wait-01]');
});

// Each node's rect and text boxes on the page, its texts and tooltip.
async function graphNodes() {
  return page.$$eval('[data-testid=workflow-graph] g.wf-node', (gs) => gs.map((g) => {
    const box = (e) => { const r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; };
    const [title, sub] = [...g.querySelectorAll('text')];
    return {jid: g.dataset.jid, state: g.dataset.state, rect: box(g.querySelector('rect')),
      title: title.textContent, sub: sub.textContent, titleBox: box(title), subBox: box(sub),
      tip: g.querySelector('title').textContent, x: +g.querySelector('rect').getAttribute('x')};
  }));
}

test('the workflow graph\'s labels fit stock jids and long job types, and ACKed jobs stay in it', async () => {
  // 24-hex jids as stock clients make them; A and C succeed, B dies: D is blocked
  const [A, B, C, D] = ['5f1e2d3c4b5a69788796a5b4', '6a7b8c9d0e1f203142536475', '7c8d9e0f1a2b3c4d5e6f7081', '8e9f0a1b2c3d4e5f60718293'];
  const T = {[A]: 'FetchCustomerRecordsFromSalesforce', [B]: 'TransformCustomerRecordsIntoWarehouseRows',
    [C]: 'EnrichCustomerRecordsWithGeolocation', [D]: 'LoadWarehouse'};
  const dep = (jid, parents, extra) => ({jid, jobtype: T[jid], args: [], queue: 'lblq', custom: {depends_on: parents}, ...extra});
  await client.cmd('PUSHB ' + JSON.stringify([{jid: A, jobtype: T[A], args: [], queue: 'lblq'},
    dep(B, [A], {retry: -1}), dep(C, [A]), dep(D, [B, C])]));
  for (const [jid, ok] of [[A, true], [B, false], [C, true]]) {
    const j = await client.fetch('lblq');
    assert.equal(j && j.jid, jid);
    if (ok) await client.ack(jid); else await client.fail(jid, 'SchemaError', 'column "total" missing');
  }
  assert.equal((await apiGet('job/' + D)).state, 'blocked');
  await page.goto(BASE + '/#/workflow/' + D);
  await page.waitForSelector(`[data-testid=workflow-graph] g.wf-node[data-jid="${A}"]`);
  const nodes = await graphNodes();
  const inside = (x, o) => x.l >= o.l - 0.5 && x.r <= o.r + 0.5 && x.t >= o.t - 0.5 && x.b <= o.b + 0.5;
  assert.deepEqual(nodes.map((n) => [n.jid, n.state]), [[A, 'succeeded'], [B, 'dead'], [C, 'succeeded'], [D, 'blocked']],
    'the ACKed root and middle job stay, as succeeded (issue 25 item 10)');
  for (const n of nodes) {
    assert.ok(inside(n.titleBox, n.rect), `${n.jid}: its first line ${JSON.stringify(n.title)} leaves the node`);
    assert.ok(inside(n.subBox, n.rect), `${n.jid}: its second line ${JSON.stringify(n.sub)} leaves the node`);
    assert.ok(n.sub.startsWith(n.state), `${n.jid}: the state word is cut: ${JSON.stringify(n.sub)}`);
    assert.equal(n.sub.split(n.state).length, 2, `${n.jid}: the state word twice: ${JSON.stringify(n.sub)}`);
    assert.ok(!n.title.includes(n.state), `${n.jid}: the state in the first line too: ${JSON.stringify(n.title)}`);
    assert.ok(n.tip.includes(n.jid), `${n.jid}: the tooltip has the whole jid`);
    if (n.state !== 'succeeded') {
      assert.ok(n.tip.startsWith(T[n.jid] + '\n'), `${n.jid}: the tooltip has the whole job type`);
      assert.ok(n.title === T[n.jid] || (n.title.endsWith('…') && T[n.jid].startsWith(n.title.slice(0, -1))),
        `${n.jid}: the job type is cut without an ellipsis: ${JSON.stringify(n.title)}`);
    } else {
      assert.match(n.title, /^5f1e2d|^7c8d9e/, `${n.jid}: a succeeded job is named by its jid`);
      assert.match(n.tip, /succeeded_ttl/);
    }
  }
  assert.ok(nodes.find((n) => n.jid === B).title.endsWith('…'), 'the long type is cut');
  assert.equal(nodes.find((n) => n.jid === D).title, 'LoadWarehouse', 'a short type is whole');
  const by = Object.fromEntries(nodes.map((n) => [n.jid, n]));
  assert.ok(by[A].x < by[B].x && by[B].x === by[C].x && by[C].x < by[D].x, 'the root is the root again');
  const edges = await page.$$eval('[data-testid=workflow-graph] path.wf-edge', (ps) => ps.map((p) => p.dataset.parent + '>' + p.dataset.child).sort());
  assert.deepEqual(edges, [`${A}>${B}`, `${A}>${C}`, `${B}>${D}`, `${C}>${D}`]);
  // the legend explains the outlines
  const outlines = await page.textContent('[data-testid=wf-outlines]');
  assert.match(outlines, /dashed red outline: dead, and blocks its children/);
  assert.match(outlines, new RegExp(`thick outline: ${D}, this page's job`));
  await shot('workflow-labels');
});

test('a job killed by its dependency shows no attempt, and what to retry for it to run', async () => {
  await client.push({jid: 'dep-par-0001', jobtype: 'FetchCustomerRecordsFromSalesforce', args: [], queue: 'depq', retry: -1});
  await client.push({jid: 'dep-can-0001', jobtype: 'SendWelcomeEmails', args: [], queue: 'depq',
    custom: {depends_on: ['dep-par-0001'], on_dep_failure: 'cancel'}});
  const p = await client.fetch('depq');
  assert.equal(p && p.jid, 'dep-par-0001');
  await client.fail('dep-par-0001', 'ApiError', 'salesforce answered 503');
  const job = await apiGet('job/dep-can-0001');
  assert.deepEqual([job.state, job.attempts, job.history.length, job.history[0].reason], ['dead', 0, 1, 'dependency']);
  await page.goto(BASE + '/#/job/dep-can-0001');
  await page.waitForSelector('[data-testid=attempts] li');
  assert.equal(await page.textContent('[data-testid=job-attempts]'), '0');
  assert.equal(await page.textContent('[data-testid=attempts-title]'), 'Attempts');
  assert.match(await page.textContent('[data-testid=attempts] li'), /^Killed by a dependency \(no attempt\) DependencyFailed/);
  assert.deepEqual(await page.$$eval('[data-testid=timeline] .mk-label', (t) => t.map((x) => x.textContent)), [], 'no attempt marker');
  // it names the parent that killed it, and that both have to be retried (issue 25 item 8)
  await until('the advice', async () => /to run this job, retry dep-par-0001 and dep-can-0001$/.test(
    await page.textContent('[data-testid=job-killed-by]')));
  assert.match(await page.textContent('[data-testid=job-killed-by]'), /^dep-par-0001 \(its parent died\)/);
  await shot('job-killed-by-dependency');
  // its workflow page says the same, and no longer "retry it to unblock"
  await page.goto(BASE + '/#/workflow/dep-can-0001');
  await page.waitForSelector('[data-testid=workflow-blocking] li[data-jid=dep-can-0001]');
  assert.equal(await page.textContent('[data-testid=workflow-blocking] li[data-jid=dep-can-0001]'),
    'dep-can-0001 was killed when its parent dep-par-0001 died: to run it, retry dep-par-0001 and dep-can-0001.');
  await shot('workflow-killed-by-dependency');
  // retried alone while its parent is dead, it goes back under it, blocked, not enqueued
  await page.goto(BASE + '/#/job/dep-can-0001');
  await page.waitForSelector('[data-testid=job-retry]');
  await page.click('[data-testid=job-retry]');
  await until('state blocked on the page', async () =>
    (await page.textContent('[data-testid=job-state]').catch(() => '')) === 'blocked');
  assert.equal((await apiGet('job/dep-can-0001')).state, 'blocked');
  assert.equal(await client.fetch('depq'), null, 'not enqueued without its parent');
  await until('the blocked advice', async () => /dep-par-0001 \(dead\) — to run this job, retry dep-par-0001$/.test(
    await page.textContent('[data-testid=job-blocked-by]').catch(() => '')));
  await shot('job-retried-blocked');
});

test('the batches page shows progress, the batch page its members and callbacks', async () => {
  // a batch of 4: 2 ACKed, 1 failed (retrying), 1 enqueued; a child batch under it
  const bid = await client.cmd('BATCH NEW ' + JSON.stringify({description: 'Nightly import',
    success: {jid: 'bt-succ-0001', jobtype: 'ImportDone', args: [], queue: 'btcb'},
    complete: {jid: 'bt-comp-0001', jobtype: 'ImportReport', args: [], queue: 'btcb'}}));
  const slow = {dialect: 'temporal', initial_interval: '10m', maximum_attempts: 8};
  for (let i = 1; i <= 4; i++) await client.push({jid: `bt-job-000${i}`, jobtype: 'ImportRows', args: [i], queue: 'btq', retry_policy: slow, custom: {bid}});
  await client.cmd('BATCH COMMIT ' + bid);
  for (let i = 1; i <= 3; i++) {
    const j = await client.fetch('btq');
    assert.equal(j && j.jid, `bt-job-000${i}`);
    if (i < 3) await client.ack(j.jid); else await client.fail(j.jid, 'RowError', 'row 17: bad date');
  }
  const child = await client.cmd('BATCH NEW ' + JSON.stringify({description: 'Thumbnails', parent_bid: bid,
    success: {jid: 'bt-kid-succ1', jobtype: 'ThumbsDone', args: [], queue: 'btcb'}}));
  // another batch whose complete callback was enqueued: its member ran
  const other = await client.cmd('BATCH NEW ' + JSON.stringify({description: 'Emails',
    complete: {jid: 'bt-comp-0002', jobtype: 'EmailsReport', args: [], queue: 'btcb'}}));
  await client.push({jid: 'bt-mail-0001', jobtype: 'SendMail', args: [], queue: 'btq2', custom: {bid: other}});
  await client.cmd('BATCH COMMIT ' + other);
  await client.ack((await client.fetch('btq2')).jid);
  assert.equal((await apiGet('batch/' + other)).complete_st, '1');

  await page.goto(BASE + '/#/batches');
  await page.waitForSelector(`[data-testid=batch-row][data-bid="${bid}"]`);
  assert.equal(await page.getAttribute('#nav a.active', 'data-page'), 'batches');
  const bar = await page.$eval(`[data-testid=batch-row][data-bid="${bid}"] [data-testid=batch-progress]`, (p) => ({
    done: p.dataset.done, total: p.dataset.total, failed: p.dataset.failed, text: p.querySelector('.bp-text').textContent,
    track: +p.querySelector('.bp-track').getAttribute('width'), wDone: +p.querySelector('.bp-done').getAttribute('width'),
    xFailed: +p.querySelector('.bp-failed').getAttribute('x'), wFailed: +p.querySelector('.bp-failed').getAttribute('width')}));
  assert.deepEqual([bar.done, bar.total, bar.failed], ['2', '4', '1']);
  assert.equal(bar.text, '2 / 4 done, 1 failed');
  assert.equal(bar.wDone * 2, bar.track, 'half done: half the bar');
  assert.equal(bar.xFailed, bar.wDone, 'failed drawn after done');
  assert.equal(bar.wFailed * 4, bar.track, 'a quarter failed');
  // the open ones only: three batches (the child not committed counts as open)
  const rows = await page.$$eval('[data-testid=batch-row]', (rs) => rs.map((r) => r.dataset.bid));
  assert.deepEqual(rows.slice().sort(), [bid, child, other].sort());
  const otherRow = await page.textContent(`[data-testid=batch-row][data-bid="${other}"]`);
  assert.match(otherRow, /1 \/ 1 done/);
  assert.match(otherRow, /enqueued/);
  await shot('batches');

  // the batch page: counts, callbacks, the child, members linking to their jobs
  await page.click(`[data-testid=batch-row][data-bid="${bid}"] a[href="#/batch/${bid}"]`);
  await page.waitForSelector('[data-testid=batch-members]');
  assert.equal(new URL(page.url()).hash, '#/batch/' + bid);
  assert.equal(await page.textContent('[data-testid=batch-total]'), '4');
  assert.equal(await page.textContent('[data-testid=batch-done]'), '2');
  assert.equal(await page.textContent('[data-testid=batch-pending]'), '2');
  assert.equal(await page.textContent('[data-testid=batch-failed]'), '1');
  const members = await page.$$eval('[data-testid=batch-members] tbody tr', (rs) => rs.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(members, [['bt-job-0003', 'ImportRows', 'btq', 'retries', '1'], ['bt-job-0004', 'ImportRows', 'btq', 'enqueued', '0']]);
  const cbs = await page.$$eval('[data-testid=batch-callbacks] tbody tr', (rs) => rs.map((r) => [r.dataset.kind, r.dataset.st, r.cells[1].textContent]));
  assert.deepEqual(cbs, [['complete', '', 'not yet'], ['success', '', 'not yet']]);
  assert.equal(await page.textContent('[data-testid=batch-children]'), child);
  assert.equal(await page.textContent('[data-testid=batch-parent]'), '–');
  await shot('batch');
  // a member's link leads to its job page, which links back to the batch
  await page.click('[data-testid=batch-members] a[href="#/job/bt-job-0003"]');
  await page.waitForSelector('[data-testid=job-batch]');
  assert.equal(await page.textContent('[data-testid=job-state]'), 'retries');
  assert.equal(await page.getAttribute('[data-testid=job-batch]', 'href'), '#/batch/' + bid);
  // the child's page names its parent; the other batch's its enqueued callback
  await page.goto(BASE + '/#/batch/' + child);
  await page.waitForSelector(`[data-testid=batch-parent] a[href="#/batch/${bid}"]`);
  await page.goto(BASE + '/#/batch/' + other);
  await page.waitForSelector('[data-testid=batch-callbacks] tr[data-kind=complete][data-st="1"]');
  assert.match(await page.textContent('[data-testid=batch-callbacks]'), /enqueued.*bt-comp-0002/);
  // a callback job's page links to its batch too
  await page.goto(BASE + '/#/job/bt-comp-0002');
  await page.waitForSelector('[data-testid=job-batch]');
  assert.equal(await page.getAttribute('[data-testid=job-batch]', 'href'), '#/batch/' + other);
  await page.goto(BASE + '/#/batch/b-nosuchbatch00');
  await page.waitForSelector('[data-testid=batch-error]');
  assert.match(await page.textContent('[data-testid=batch-error]'), /no batch 'b-nosuchbatch00'/);
});

test('the job page of a tracked job shows its progress bar', async () => {
  await client.push({jid: 'track-000001', jobtype: 'Transcode', args: ['movie.mkv'], queue: 'tracked', custom: {track: 1}});
  assert.equal(await client.cmd('TRACK SET ' + JSON.stringify({jid: 'track-000001', percent: 42, desc: 'pass 2 of 3'})), '+OK');
  await page.goto(BASE + '/#/job/track-000001');
  await page.waitForSelector('[data-testid=job-progress-bar]');
  assert.equal(await page.getAttribute('[data-testid=job-progress-bar]', 'aria-valuenow'), '42');
  assert.match(await page.getAttribute('[data-testid=job-progress-bar] .progress-fill', 'style'), /width:\s*42%/);
  assert.match(await page.textContent('[data-testid=job-progress-text]'), /42% · pass 2 of 3 · enqueued/);
  await shot('job-progress');
  // an untracked job has no progress panel
  await page.goto(BASE + '/#/job/sched-00001');
  await page.waitForSelector('[data-testid=job-state]');
  await sleep(300);
  assert.ok(await page.$eval('[data-testid=job-progress]', (e) => e.hidden));
});

// fmtTime's text of an API time (the page writes UTC to the second).
const utc = (iso) => new Date(iso).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');

test('the cron page lists each entry with its schedule, last fired tick and next runs', async () => {
  // browser.sh moved the cron clock to 3 s before a new year: the yearly entry fires once
  const r = await until('the yearly entry to fire', async () => {
    const c = await apiGet('cron?count=5');
    return c.entries.find((e) => e.name === 'new-year-report').last ? c : null;
  });
  const yearly = r.entries.find((e) => e.name === 'new-year-report');
  assert.equal((await apiGet('job/' + yearly.last_jid)).jobtype, 'YearlyReport');
  await page.goto(BASE + '/#/cron');
  const row = 'tr[data-name=new-year-report]', nightly = 'tr[data-name=nightly-cleanup]';
  await page.waitForSelector(row + ' [data-testid=cron-last] a');
  assert.equal(await page.textContent(row + ' [data-testid=cron-schedule]'), '0 0 1 1 *');
  assert.equal(await page.textContent(row + ' [data-testid=cron-tz]'), 'UTC');
  assert.match(await page.textContent(row), /YearlyReport.*queue cron/);
  assert.equal(await page.textContent(row + ' [data-testid=cron-last] a'), yearly.last_jid);
  assert.equal(await page.getAttribute(row + ' [data-testid=cron-last] span', 'title'), utc(yearly.last));
  const next = await page.$$eval(row + ' [data-testid=cron-next] li', (li) => li.map((x) => x.textContent));
  assert.equal(next.length, 5);
  next.forEach((t, i) => assert.ok(t.startsWith(utc(yearly.next[i])), `next run ${i}: ${t}`));
  // the other entry: its zone, its catch-up rule, never fired
  assert.equal(await page.textContent(nightly + ' [data-testid=cron-tz]'), 'Europe/Berlin');
  assert.equal((await page.textContent(nightly + ' [data-testid=cron-last]')).trim(), 'never');
  assert.match(await page.textContent(nightly), /Cleanup.*queue maintenance.*one catch-up run/);
  const nn = r.entries.find((e) => e.name === 'nightly-cleanup').next[0];
  assert.ok((await page.textContent(nightly + ' [data-testid=cron-next] li')).startsWith(utc(nn)));
  await shot('cron');
  // the overview counts the entries
  await page.goto(BASE + '/');
  await until('the cron card', async () => (await page.$('[data-testid=card-cron] .n')) &&
    (await page.textContent('[data-testid=card-cron] .n')) === '2');
});

test('the throttles page shows each throttled queue\'s slots in use and limit', async () => {
  for (let i = 0; i < 3; i++) await client.push({jid: `image-00000${i}`, jobtype: 'Thumbnail', args: [i], queue: 'images'});
  const a = await client.fetch('images');
  await page.goto(BASE + '/#/throttles');
  const row = 'tr[data-queue=images]';
  await page.waitForSelector(row);
  await until('one slot in use', async () => (await page.getAttribute(row + ' [data-testid=throttle-slots]', 'data-in-use')) === '1');
  assert.equal(await page.getAttribute(row + ' [data-testid=throttle-slots]', 'data-limit'), '2');
  assert.equal(await page.textContent(row + ' [data-testid=throttle-limit]'), '2');
  assert.equal(await page.textContent(row + ' [data-testid=throttle-timeout]'), '1m');
  assert.match(await page.textContent(row), /1 \/ 2/);
  const b = await client.fetch('images');
  assert.equal(await client.fetch('images'), null, 'the throttle holds the third job back');
  await until('both slots in use', async () => (await page.getAttribute(row + ' [data-testid=throttle-slots]', 'data-in-use')) === '2');
  assert.match(await page.textContent(row), /full/);
  const t = (await apiGet('throttles')).throttles.find((x) => x.queue === 'images');
  assert.deepEqual([t.in_use, t.concurrency, t.timeout_s, t.size], [2, 2, 60, 1]);
  await shot('throttles');
  await client.ack(a.jid);
  await client.ack(b.jid);
  await until('the slots back', async () => (await page.getAttribute(row + ' [data-testid=throttle-slots]', 'data-in-use')) === '0');
});

test('the groups page shows each queue\'s groups, sets, pauses and resumes them; the job page says why a job is held', async () => {
  const groups = {acme: 4, globex: 2, initech: 1, umbrella: 3};
  for (const [g, n] of Object.entries(groups))
    for (let i = 0; i < n; i++) await client.push({jid: `out-${g}-${i}`.padEnd(16, '0'), jobtype: 'SendNewsletter', args: [g, i], queue: 'outbox', custom: {group: g}});
  const fetched = [];
  for (let i = 0; i < 4; i++) fetched.push(await client.fetch('outbox')); // one per group: acme, globex, initech, umbrella
  fetched.push(await client.fetch('outbox')); // acme's second: acme at its concurrency (2)
  await page.goto(BASE + '/#/groups');
  await page.waitForSelector('tr[data-queue=outbox][data-testid=group-queue-row]');
  assert.match(await page.textContent('tr[data-queue=outbox]'), /2 at once/);
  await page.click('tr[data-queue=outbox] a');
  const row = (g) => `tr[data-testid=group-row][data-group=${g}]`;
  await page.waitForSelector(row('acme'));
  await until('acme held by its concurrency', async () => /held/.test(await page.textContent(row('acme') + ' [data-testid=group-state]')));
  assert.match(await page.textContent(row('acme')), /runs 2 of 2/);
  // pause globex with a reason through the page
  await page.click(row('globex') + ' [data-testid=group-pause]');
  await page.fill('[data-testid=group-pause-form] input[name=until]', '600');
  await page.fill('[data-testid=group-pause-form] input[name=reason]', 'upstream said 429');
  await page.click('[data-testid=group-pause-form] button[type=submit]');
  await until('globex paused on the server', async () => (await apiGet('groups/outbox/globex')).held === 'paused');
  assert.equal((await apiGet('groups/outbox/globex')).reason, 'upstream said 429');
  await until('the page shows the pause', async () => /upstream said 429/.test(await page.textContent(row('globex'))));
  // set initech's concurrency to 1 through the page
  await page.click(row('initech') + ' [data-testid=group-set]');
  await page.fill('[data-testid=group-set-form] input[name=concurrency]', '1');
  await page.click('[data-testid=group-set-form] button[type=submit]');
  await until('initech overridden on the server', async () => {
    const g = await apiGet('groups/outbox/initech');
    return g.override && g.override.concurrency === 1 && g.limits.from.concurrency === 'override';
  });
  await until('the page shows the override', async () => /override/.test(await page.textContent(row('initech') + ' [data-testid=group-limits]')));
  await shot('groups');
  if (process.env.GROUPS_PNG) await page.screenshot({path: process.env.GROUPS_PNG, fullPage: true});
  // the job page of a held job says why and of which group
  await page.goto(BASE + '/#/job/' + 'out-acme-2'.padEnd(16, '0'));
  await page.waitForSelector('[data-testid=job-held]');
  assert.equal(await page.textContent('[data-testid=job-group]'), 'acme');
  assert.match(await page.textContent('[data-testid=job-held]'), /group acme runs 2 of 2/);
  await page.goto(BASE + '/#/job/' + 'out-globex-1'.padEnd(16, '0'));
  await page.waitForSelector('[data-testid=job-held]');
  assert.match(await page.textContent('[data-testid=job-held]'), /group globex is paused until .*: upstream said 429/);
  // resume globex from the page
  await page.goto(BASE + '/#/groups?queue=outbox&state=paused');
  await page.waitForSelector(row('globex') + ' [data-testid=group-resume]');
  await page.click(row('globex') + ' [data-testid=group-resume]');
  await until('globex resumed on the server', async () => (await apiGet('groups/outbox/globex')).held === null);
  for (const j of fetched) await client.ack(j.jid);
});

test('the job page shows a unique job\'s lock and expiry; the overview counts expired jobs', async () => {
  await client.push({jid: 'unique-000001', jobtype: 'Invoice', args: [42], queue: 'uniq', custom: {unique_for: 3600, expires_in: 7200}});
  await client.push({jid: 'unique-000002', jobtype: 'Invoice', args: [43], queue: 'uniq-start', custom: {unique_for: 600, unique_until: 'start'}});
  const started = await client.fetch('uniq-start'); // unique_until start: the lock goes at the fetch
  assert.equal(started.jid, 'unique-000002');
  const held = await apiGet('job/unique-000001');
  assert.equal(held.unique.locked, true);
  await page.goto(BASE + '/#/job/unique-000001');
  await page.waitForSelector('[data-testid=job-unique]');
  assert.match(await page.textContent('[data-testid=job-unique]'), /^for 1h, until success · lock held until /);
  assert.ok((await page.textContent('[data-testid=job-unique]')).endsWith(utc(held.unique.lock_until)));
  assert.equal(await page.getAttribute('[data-testid=job-lock]', 'data-locked'), 'true');
  assert.ok((await page.textContent('[data-testid=job-expiry]')).startsWith(utc(held.expiry)));
  await shot('job-unique');
  await page.goto(BASE + '/#/job/unique-000002');
  await page.waitForSelector('[data-testid=job-unique]');
  assert.match(await page.textContent('[data-testid=job-unique]'), /^for 10m, until start · lock not held/);
  assert.equal(await page.getAttribute('[data-testid=job-lock]', 'data-locked'), 'false');
  assert.equal(await page.$('[data-testid=job-expiry]'), null);
  await client.ack(started.jid);
  // a job whose expires_at has passed is dropped at its fetch and counted
  const before = (await apiGet('info')).all_time.expired;
  await client.push({jid: 'expire-000001', jobtype: 'Flash', args: [], queue: 'short', custom: {expires_in: 0}});
  assert.equal(await client.fetch('short'), null);
  assert.equal((await apiGet('info')).all_time.expired, before + 1);
  await page.goto(BASE + '/');
  await until('the expired card', async () => (await page.$('[data-testid=card-expired] .n')) &&
    (await page.textContent('[data-testid=card-expired] .n')) === String(before + 1));
  assert.ok(await page.$('[data-testid=card-unique] .n'));
  await shot('overview-enterprise');
});

// --- another origin against the dashboard (issue 26) -----------------------

// A page another site serves to the operator: a form post and a text/plain
// form (each into a hidden frame), two no-cors fetches with credentials,
// and the dashboard in a frame (to overlay it and trick a click).
function attackPage(target) {
  return `<!doctype html><title>attack</title>
<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
<iframe id="framed" src="${target}/"></iframe>
<form id="f1" method="POST" action="${target}/api/queues/mail/pause" target="sink1"><input name="a" value="b"></form>
<form id="f2" method="POST" enctype="text/plain" action="${target}/api/jobs/discard" target="sink2"><input name='{"state":"dead","all":true,"x":"' value='"}'></form>
<script>
document.getElementById('framed').onload = () => { document.title += ' framed-loaded'; };
document.getElementById('f1').submit();
document.getElementById('f2').submit();
const post = (path, body) => fetch('${target}' + path, {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body}).catch(() => {});
post('/api/workers/quiet', '{}');
post('/api/jobs/discard', JSON.stringify({state: 'dead', all: true}));
</script>`;
}

function serverLog() { return fs.readFileSync(process.env.REBOUND_LOG, 'utf8'); }

// Opens the attack page at pageUrl against the dashboard at target. Returns
// the POSTs the browser sent there (paths, sorted) once each is over, the
// statuses the page's frames got back (the fetches' opaque answers are
// also refused by Cross-Origin-Resource-Policy, so they show as failed),
// the server's log lines of that time, and whether the dashboard showed
// in the page's frame.
async function attackFrom(pageUrl, target) {
  const attack = await ctx.newPage();
  const sent = [], over = [], statuses = [];
  const ours = (q) => q.method() === 'POST' && q.url().startsWith(target + '/api/');
  attack.on('request', (q) => { if (ours(q)) sent.push(new URL(q.url()).pathname); });
  attack.on('requestfinished', (q) => { if (ours(q)) over.push(q.url()); });
  attack.on('requestfailed', (q) => { if (ours(q)) over.push(q.url()); });
  attack.on('response', (r) => { if (ours(r.request())) statuses.push(r.status()); });
  const from = serverLog().length;
  await attack.goto(pageUrl);
  await until('the four attacks sent and over', async () => sent.length >= 4 && over.length >= sent.length);
  await until('the framed dashboard to load or fail', async () => /framed-loaded/.test(await attack.title()));
  const framed = await (await attack.$('#framed')).contentFrame();
  const dashboardInFrame = framed ? await framed.$('#main').catch(() => null) : null;
  await attack.close();
  return {sent: sent.sort(), statuses, log: serverLog().slice(from), framed: !!dashboardInFrame};
}

// Checks an attack run: the four POSTs sent, every answer the page could
// see 403, and the server's log naming each refusal with the
// Sec-Fetch-Site the browser sent.
function assertRefused(r, site) {
  assert.deepEqual(r.sent, ['/api/jobs/discard', '/api/jobs/discard', '/api/queues/mail/pause', '/api/workers/quiet']);
  assert.ok(r.statuses.length >= 2 && r.statuses.every((st) => st === 403), `statuses ${r.statuses}`);
  const refusals = r.log.split('\n').filter((l) => l.includes('refused a cross-origin POST /api/'));
  assert.deepEqual(refusals.map((l) => l.replace(/^.*refused a cross-origin POST /, '')).sort(),
    ['/api/jobs/discard', '/api/jobs/discard', '/api/queues/mail/pause', '/api/workers/quiet'].map((p) => `${p}: Sec-Fetch-Site '${site}'`),
    r.log);
  assert.equal(r.framed, false, 'the dashboard showed in another origin\'s frame');
}

test('a page on another origin cannot act through the dashboard, frame it, or read it by name', async () => {
  // the state the attack aims at: dead jobs, an active queue, a worker
  await client.push({jid: 'dead-csrf-01', jobtype: 'ChargeCard', args: [], queue: 'csrf', retry: -1});
  const job = await until('the job to fetch', () => client.fetch('csrf'));
  assert.equal(job.jid, 'dead-csrf-01');
  await client.fail(job.jid, 'PaymentDeclined', 'card declined');
  const dead = (await apiGet('jobs?state=dead')).total;
  assert.ok(dead >= 1);
  const victim = await Client.connect(PORT, 'victim-worker');
  const unchanged = async () => {
    assert.equal((await apiGet('jobs?state=dead')).total, dead, 'the dead jobs were discarded');
    assert.equal((await apiGet('queues')).queues.find((x) => x.name === 'mail').paused, false, 'mail was paused');
    const w = (await apiGet('workers')).workers.find((x) => x.wid === 'victim-worker');
    assert.equal(w.signal, 'none', 'the worker was told to ' + w.signal);
  };
  // the attacker's server: one page, on a port of its own
  const evil = http.createServer((req, res) => {
    const target = new URL(req.url, 'http://x').searchParams.get('target');
    res.writeHead(200, {'Content-Type': 'text/html'});
    res.end(attackPage(target));
  });
  try {
    await unchanged();
    await new Promise((r) => evil.listen(0, '127.0.0.1', r));
    const other = evil.address().port;
    allowed.push(`http://localhost:${other}/`, `http://127.0.0.1:${other}/`, `http://${REBOUND_NAME}:`);
    // cross-site: a page on localhost:OTHER against 127.0.0.1:PORT
    assertRefused(await attackFrom(`http://localhost:${other}/attack.html?target=${encodeURIComponent(BASE)}`, BASE), 'cross-site');
    await unchanged();
    // same-site, another origin: a page on 127.0.0.1:OTHER
    assertRefused(await attackFrom(`http://127.0.0.1:${other}/attack.html?target=${encodeURIComponent(BASE)}`, BASE), 'same-site');
    await unchanged();
    // DNS rebinding: a name the attacker points at the server is refused
    const rebound = await ctx.newPage();
    const resp = await rebound.goto(`http://${REBOUND_NAME}:${new URL(BASE).port}/api/info`);
    assert.equal(resp.status(), 421);
    assert.doesNotMatch(await resp.text(), /"server"/);
    await rebound.close();
  } finally {
    evil.close();
    victim.close();
  }
  // and the dashboard's own actions still work: pause and resume from its page
  await page.goto(BASE + '/#/queues');
  await page.click('tr[data-queue=mail] [data-testid=pause]');
  await page.waitForSelector('tr[data-queue=mail] [data-testid=resume]');
  assert.equal((await apiGet('queues')).queues.find((x) => x.name === 'mail').paused, true);
  await page.click('tr[data-queue=mail] [data-testid=resume]');
  await page.waitForSelector('tr[data-queue=mail] [data-testid=pause]');
  assert.equal((await apiGet('queues')).queues.find((x) => x.name === 'mail').paused, false);
});

test('the dashboard loads nothing from outside the server and raises no script error', async () => {
  assert.deepEqual(outside, []);
  assert.deepEqual(pageErrors, []);
});

test('the dashboard ran under its Content-Security-Policy without a violation', async () => {
  assert.deepEqual(cspViolations, []);
  // the policy is in force, and a violation would have been seen: an inline
  // style attribute and an inline script are refused
  await page.goto(BASE + '/');
  await page.waitForSelector('[data-testid=card-dead] .n');
  const ran = await page.evaluate(() => {
    document.body.setAttribute('style', 'outline: 1px solid red');
    const sc = document.createElement('script');
    sc.textContent = 'window.__inlineRan = true;';
    document.body.append(sc);
    return window.__inlineRan === true;
  });
  assert.equal(ran, false, 'an inline script ran');
  await until('the violations reported', async () => cspViolations.some((v) => /style-src/.test(v)) && cspViolations.some((v) => /script-src/.test(v)));
  cspViolations.length = 0;
});
